// The local host's cron: fires the Worker's scheduled() on the schedule wrangler.toml's
// `[triggers] crons` gives it, as Cloudflare does in production, so what the cron heals there
// (sessions pending an LLM retry, a reindex) heals here without anyone calling /__scheduled.
//
// Cron expressions are Cloudflare's five fields, in UTC: minute hour day-of-month month
// day-of-week, each `*`, a number, a range `a-b`, a step `*/n` or `a-b/n`, or a list of those;
// months and days may be named (JAN, MON). Cloudflare's `L`, `W` and `#` are not read here:
// such an expression is reported and left out.
//
// `--cron-every SECONDS` (or ENTITY_MEMORY_CRON_EVERY) replaces the schedule with a fixed
// period (tests, or a quicker retry while developing); 0 turns the timer off.

const FIELDS = [
  { name: "minute", min: 0, max: 59 },
  { name: "hour", min: 0, max: 23 },
  { name: "day of month", min: 1, max: 31 },
  { name: "month", min: 1, max: 12, names: "JAN FEB MAR APR MAY JUN JUL AUG SEP OCT NOV DEC" },
  { name: "day of week", min: 0, max: 7, names: "SUN MON TUE WED THU FRI SAT" },
];
// A schedule is looked ahead this far for its next minute (a year and a day: Feb 29 fits).
const LOOKAHEAD_MINUTES = 367 * 24 * 60;
const MINUTE_MS = 60_000;

function value(text, field) {
  const names = field.names?.split(" ") ?? [];
  const named = names.indexOf(text.toUpperCase());
  if (named >= 0) return named + (field.name === "month" ? 1 : 0);
  if (!/^\d+$/.test(text)) throw new Error(`${field.name}: ${JSON.stringify(text)} is not a number`);
  const n = Number(text);
  if (n < field.min || n > field.max) throw new Error(`${field.name}: ${n} is out of range`);
  return n;
}

function parseField(text, field) {
  const allowed = new Set();
  for (const part of text.split(",")) {
    const [range, stepText] = part.split("/");
    const step = stepText === undefined ? 1 : Number(stepText);
    if (!Number.isInteger(step) || step < 1) throw new Error(`${field.name}: bad step in ${part}`);
    let lo, hi;
    if (range === "*") [lo, hi] = [field.min, field.max];
    else if (range.includes("-")) [lo, hi] = range.split("-").map((t) => value(t, field));
    else [lo, hi] = [value(range, field), stepText === undefined ? value(range, field) : field.max];
    for (let n = lo; n <= hi; n += step) allowed.add(field.name === "day of week" ? n % 7 : n);
  }
  return { allowed, any: text === "*" };
}

// `{matches(date)}` for one expression; throws with the reason for one this cannot read.
export function parseCron(expression) {
  const parts = expression.trim().split(/\s+/);
  if (parts.length !== FIELDS.length) throw new Error("a cron has five fields");
  const [minute, hour, dom, month, dow] = parts.map((text, i) => parseField(text, FIELDS[i]));
  return {
    expression,
    matches(date) {
      if (!minute.allowed.has(date.getUTCMinutes()) || !hour.allowed.has(date.getUTCHours())) {
        return false;
      }
      if (!month.allowed.has(date.getUTCMonth() + 1)) return false;
      // As in cron: with both day fields restricted, either one matching is enough.
      const byDom = dom.allowed.has(date.getUTCDate());
      const byDow = dow.allowed.has(date.getUTCDay());
      if (dom.any || dow.any) return byDom && byDow;
      return byDom || byDow;
    },
  };
}

// The first whole minute after `afterMs` that one of `crons` matches, and which: `{at, cron}`.
export function nextFire(crons, afterMs) {
  let t = Math.floor(afterMs / MINUTE_MS) * MINUTE_MS + MINUTE_MS;
  for (let i = 0; i < LOOKAHEAD_MINUTES; i += 1, t += MINUTE_MS) {
    const date = new Date(t);
    const hit = crons.find((c) => c.matches(date));
    if (hit) return { at: t, cron: hit.expression };
  }
  return null;
}

// What the timer runs on: `{crons, everyMs, skipped: [why...]}`.
export function cronPlan(expressions, everySeconds) {
  if (everySeconds !== undefined && everySeconds !== "") {
    const seconds = Number(everySeconds);
    if (!Number.isFinite(seconds) || seconds < 0) {
      throw new Error(`--cron-every takes seconds (0: off), got ${JSON.stringify(everySeconds)}`);
    }
    return { crons: [], everyMs: seconds * 1000, skipped: [] };
  }
  const crons = [];
  const skipped = [];
  for (const expression of expressions ?? []) {
    try {
      crons.push(parseCron(expression));
    } catch (err) {
      skipped.push(`${expression}: ${err.message}`);
    }
  }
  return { crons, everyMs: null, skipped };
}

// Calls `fire(cron, scheduledTimeMs)` on the plan's schedule until `stop()`; a run still going
// when the next is due makes that one wait for it (never two at once).
export function startCronTimer(plan, fire) {
  let timer = null;
  let stopped = false;
  const label = plan.crons.map((c) => c.expression).join(", ") || "* * * * *";
  const schedule = () => {
    if (stopped) return;
    const now = Date.now();
    const next = plan.everyMs
      ? { at: now + plan.everyMs, cron: label }
      : nextFire(plan.crons, now);
    if (!next) return;
    timer = setTimeout(async () => {
      await fire(next.cron, next.at);
      schedule();
    }, Math.max(0, next.at - now));
    timer.unref();
  };
  if (plan.everyMs !== 0 && (plan.everyMs || plan.crons.length)) schedule();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

// The schedule in words, for the start-up line.
export function describePlan(plan) {
  if (plan.everyMs === 0) return "off (--cron-every 0)";
  if (plan.everyMs) return `every ${plan.everyMs / 1000} s (--cron-every)`;
  if (!plan.crons.length) return "none (no [triggers] crons in wrangler.toml)";
  return `${plan.crons.map((c) => c.expression).join(", ")} (UTC, wrangler.toml)`;
}
