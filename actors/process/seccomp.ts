// The sandbox's seccomp filter under "no network" (bwrap `--seccomp FD`): a classic BPF program, built here so no
// libseccomp is needed. The network namespace already cuts IP and abstract unix sockets; what it cannot cut is a
// unix socket bound to a path on the host's filesystem (a docker.sock, a session bus), which any process that can
// see the path can connect to. So `socket(AF_UNIX, ...)` fails with EACCES (socketpair stays allowed: asyncio and
// Node use it), io_uring (which creates sockets without the socket syscall) fails with EPERM, and a syscall of
// another ABI (i386 through int 0x80, with its own numbers and socketcall) kills the process.

/** The architectures the filter can be built for: Node's `process.arch` -> its audit arch and syscall numbers. */
const ARCHES: Record<string, { audit: number; socket: number; ioUringSetup: number; x32: boolean }> = {
  // arch/x86/entry/syscalls/syscall_64.tbl; x32 syscalls are the same numbers with bit 30 set.
  x64: { audit: 0xc000003e, socket: 41, ioUringSetup: 425, x32: true },
  // include/uapi/asm-generic/unistd.h
  arm64: { audit: 0xc00000b7, socket: 198, ioUringSetup: 425, x32: false },
};

const BPF_LD_W_ABS = 0x20;
const BPF_JEQ_K = 0x15;
const BPF_JGE_K = 0x35;
const BPF_RET_K = 0x06;
const RET_ALLOW = 0x7fff0000;
const RET_KILL_PROCESS = 0x80000000;
const RET_ERRNO = 0x00050000;
const EPERM = 1;
const EACCES = 13;
const ENOSYS = 38;
const AF_UNIX = 1;
const X32_SYSCALL_BIT = 0x40000000;
// struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6] (little-endian: the low half
// of args[0] is at 16; socket's domain is an int, so the kernel reads only that half too).
const OFFSET_NR = 0;
const OFFSET_ARCH = 4;
const OFFSET_ARG0_LOW = 16;

type Insn = { code: number; k: number; jt?: string; jf?: string } | { label: string };

/** Resolves labels to the relative jump offsets of classic BPF and encodes struct sock_filter (8 bytes each). */
function assemble(program: Insn[]): Buffer {
  const code = program.filter((i): i is Exclude<Insn, { label: string }> => !("label" in i));
  const at = new Map<string, number>();
  let n = 0;
  for (const i of program) {
    if ("label" in i) at.set(i.label, n);
    else n += 1;
  }
  const out = Buffer.alloc(code.length * 8);
  code.forEach((insn, index) => {
    const jump = (label: string | undefined) => {
      if (label === undefined) return 0;
      const target = at.get(label);
      if (target === undefined || target <= index || target - index - 1 > 255) throw new Error(`bad jump ${label}`);
      return target - index - 1;
    };
    out.writeUInt16LE(insn.code, index * 8);
    out.writeUInt8(jump(insn.jt), index * 8 + 2);
    out.writeUInt8(jump(insn.jf), index * 8 + 3);
    out.writeUInt32LE(insn.k >>> 0, index * 8 + 4);
  });
  return out;
}

/** The filter for this machine's architecture, or why there is none (only x86_64 and aarch64 are known). */
export function unixSocketFilter(
  arch: string = process.arch,
): { ok: true; program: Buffer } | { ok: false; why: string } {
  const a = ARCHES[arch];
  if (!a) {
    return {
      ok: false,
      why: `no seccomp filter for ${arch} (x64 and arm64 only): unix sockets on the host's filesystem stay reachable`,
    };
  }
  const program: Insn[] = [
    { code: BPF_LD_W_ABS, k: OFFSET_ARCH },
    { code: BPF_JEQ_K, k: a.audit, jf: "kill" },
    { code: BPF_LD_W_ABS, k: OFFSET_NR },
    ...(a.x32 ? [{ code: BPF_JGE_K, k: X32_SYSCALL_BIT, jt: "enosys" }] : []),
    { code: BPF_JEQ_K, k: a.socket, jt: "socket" },
    { code: BPF_JEQ_K, k: a.ioUringSetup, jt: "eperm" },
    { code: BPF_RET_K, k: RET_ALLOW },
    { label: "socket" },
    { code: BPF_LD_W_ABS, k: OFFSET_ARG0_LOW },
    { code: BPF_JEQ_K, k: AF_UNIX, jt: "eacces" },
    { code: BPF_RET_K, k: RET_ALLOW },
    { label: "eacces" },
    { code: BPF_RET_K, k: RET_ERRNO | EACCES },
    { label: "eperm" },
    { code: BPF_RET_K, k: RET_ERRNO | EPERM },
    { label: "enosys" },
    // What a kernel without x32 support answers: an x32 program sees no syscalls at all.
    { code: BPF_RET_K, k: RET_ERRNO | ENOSYS },
    { label: "kill" },
    { code: BPF_RET_K, k: RET_KILL_PROCESS },
  ];
  return { ok: true, program: assemble(program) };
}
