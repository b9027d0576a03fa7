// The Worker's scheduled() on the local host: fired by the cron timer (local/cron.mjs) on
// wrangler.toml's schedule, or by hand with `GET /__scheduled` (like `wrangler dev
// --test-scheduled`). Both go through runScheduled, one event at a time.
import { timingSafeEqual } from "node:crypto";

import { ExecutionContext, ScheduledController } from "./runtime.mjs";

// With API_TOKEN set, firing the cron is an admin action like any other: only the admin token.
function scheduledAllowed(apiToken, authorization) {
  if (!apiToken) return true;
  const given = Buffer.from(String(authorization ?? ""));
  const expected = Buffer.from(`Bearer ${apiToken}`);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

// One cron event: scheduled(controller, env, ctx), then its waitUntil work. Runs one at a time
// (the timer's and /__scheduled's): a second waits for the first, as the cron pending retries
// must not extract one session twice at once.
let scheduledChain = Promise.resolve();

export function runScheduled(app, cron, time) {
  const run = scheduledChain.then(async () => {
    const controller = new ScheduledController(cron, time);
    const ctx = new ExecutionContext();
    try {
      const result = await app.dispatch.call_scheduled(app.entrypoint, ctx, app.env, controller);
      // A cron event lasts until its waitUntil work is done.
      await ctx.settled();
      return { ok: true, noRetry: controller.retryDisabled, result };
    } catch (err) {
      const text = String(err?.message ?? err);
      console.error(`[scheduled] ${cron} raised:\n${text}`);
      return { ok: false, error: text };
    }
  });
  scheduledChain = run.then(() => {});
  return run;
}

// What a timer-fired run did, in one line when it retried anything.
export function logTimerRun(cron, outcome) {
  if (!outcome.ok) return;
  const retried = outcome.result?.pendingSessions ?? outcome.result?.get?.("pendingSessions");
  const due = retried?.due ?? retried?.get?.("due") ?? 0;
  if (due) console.log(`[cron] ${cron}: retried ${due} session(s) pending an LLM`);
}

// Like `wrangler dev --test-scheduled`: GET /__scheduled?cron=*+*+*+*+* runs the cron handler.
export async function handleScheduled(app, req, res, sendJson) {
  if (!app.dispatch.has_handler(app.entrypoint, "scheduled")) {
    sendJson(res, 404, {
      error: { code: "no_scheduled_handler", message: "the Worker defines no scheduled()" },
    });
    return;
  }
  if (!scheduledAllowed(app.env.API_TOKEN, req.headers.authorization)) {
    sendJson(res, 401, {
      error: { code: "unauthorized", message: "/__scheduled needs the admin bearer token" },
    });
    return;
  }
  const url = new URL(req.url, "http://host");
  const cron = url.searchParams.get("cron") ?? "* * * * *";
  const time = Number(url.searchParams.get("time") ?? Date.now());
  const outcome = await runScheduled(app, cron, time);
  if (!outcome.ok) {
    sendJson(res, 500, { error: { code: "scheduled_failed", message: outcome.error } });
    return;
  }
  sendJson(res, 200, { outcome: "ok", cron, scheduledTime: time, noRetry: outcome.noRetry });
}
