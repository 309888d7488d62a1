// Live updates of a notebook call, at most one per interval; `now()` sends at once (a cell starts or ends).
export const NOTEBOOK_UPDATE_MS = 100;

export function throttled(send: () => void, intervalMs = NOTEBOOK_UPDATE_MS) {
  let last = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;
  const fire = () => {
    timer = undefined;
    if (stopped) return;
    last = Date.now();
    send();
  };
  const schedule = () => {
    if (stopped || timer) return;
    const wait = intervalMs - (Date.now() - last);
    if (wait <= 0) fire();
    else timer = setTimeout(fire, wait);
  };
  return Object.assign(schedule, {
    now: () => {
      if (timer) clearTimeout(timer);
      fire();
    },
    stop: () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
    },
  });
}
