// Stable hint ids and their advice. Ids never change (the journal records them and users search for them); the
// texts may improve. Installation hints come from the installer's output; run-time hints from the run's stderr.
import type { Hint } from "../../machines/events.ts";

export const HINT_IDS = {
  dependencyResolution: "dependency_resolution",
  uvCertificate: "uv_certificate",
  certificateVerification: "certificate_verification",
  moduleNotFound: "module_not_found",
  installerUnavailable: "installer_unavailable",
  sandboxLocalRequirement: "sandbox_local_requirement",
} as const;

const RESOLUTION =
  /No solution found when resolving|ResolutionImpossible|No matching distribution found|Could not find a version that satisfies|requirements are unsatisfiable|not found in the package registry|was not found in the provided package locations|Because [^\n]* (?:was not found|depends on)/;
const CERT =
  /CERTIFICATE_VERIFY_FAILED|certificate verify failed|invalid peer certificate|UnknownIssuer|SSLCertVerificationError|self[- ]signed certificate in certificate chain|unable to get local issuer certificate/i;

/** The hint for an installer's failure output, if one applies. */
export function installHint(output: string, installer: "uv" | "pip"): Hint | undefined {
  if (CERT.test(output)) {
    return {
      id: HINT_IDS.uvCertificate,
      text:
        `${installer} could not verify the package index's TLS certificate. Behind a proxy or a private certificate ` +
        "authority, set SSL_CERT_FILE to its CA bundle before starting Pi" +
        (installer === "uv"
          ? " (or UV_SYSTEM_CERTS=1, with older uv UV_NATIVE_TLS=1, to use the system store)"
          : " (or PIP_CERT)") +
        ". Nothing was installed and the code did not run.",
    };
  }
  if (RESOLUTION.test(output)) {
    return {
      id: HINT_IDS.dependencyResolution,
      text:
        "No set of versions satisfies the script's `# /// script` dependencies (or a name is misspelled). Check the " +
        "names and version pins in the block; the installer's explanation is above. The code did not run.",
    };
  }
  return undefined;
}

/** Import names whose distribution has another name (the common cases). */
const DISTRIBUTION_OF: Record<string, string> = {
  cv2: "opencv-python",
  PIL: "pillow",
  sklearn: "scikit-learn",
  skimage: "scikit-image",
  yaml: "pyyaml",
  bs4: "beautifulsoup4",
  dateutil: "python-dateutil",
  dotenv: "python-dotenv",
  jwt: "pyjwt",
  serial: "pyserial",
  OpenSSL: "pyopenssl",
  Crypto: "pycryptodome",
  attr: "attrs",
  magic: "python-magic",
  docx: "python-docx",
  pptx: "python-pptx",
  fitz: "pymupdf",
  google: "google-api-python-client",
  zmq: "pyzmq",
  usb: "pyusb",
  git: "gitpython",
};

const MODULE_NOT_FOUND = /ModuleNotFoundError: No module named '([^']+)'/;

/** Hints for a finished run, read from its stderr (the tail holds the traceback). */
export function runHints(stderr: string, context: { session?: string; python?: string }): Hint[] {
  const hints: Hint[] = [];
  if (/CERTIFICATE_VERIFY_FAILED/.test(stderr)) {
    hints.push({
      id: HINT_IDS.certificateVerification,
      text:
        "Python could not verify a server's TLS certificate (CERTIFICATE_VERIFY_FAILED). If a proxy or private " +
        "certificate authority is in the way, set SSL_CERT_FILE to its CA bundle (for example " +
        "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt) in the environment Pi starts with; do not disable verification.",
    });
  }
  const missing = MODULE_NOT_FOUND.exec(stderr);
  if (missing) {
    const top = missing[1].split(".")[0];
    const dist = DISTRIBUTION_OF[top] ?? top.replace(/_/g, "-");
    hints.push({
      id: HINT_IDS.moduleNotFound,
      text:
        `\`${top}\` is not installed for ${context.python ?? "this interpreter"}. Declare it in a PEP 723 block at the ` +
        `top of the script and run again:\n# /// script\n# dependencies = ["${dist}"]\n# ///` +
        (context.session
          ? ` (in session "${context.session}" it is installed into the session's package directory)`
          : ""),
    });
  }
  return hints;
}
