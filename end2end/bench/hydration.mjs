// Hydration time of a signed-in page in headless chromium (Debian's, as the
// e2e tests use it): the time from the load event to the page being
// interactive, i.e. to `data-hydrated="true"` on <html>, the mark the last
// island of the page sets once it has hydrated (what the e2e tests wait for).
//
//   node end2end/bench/hydration.mjs --url http://127.0.0.1:PORT/jobs \
//       --cookie pc_session=TOKEN [--runs 30] [--json]
//
// Each run opens a new tab in one browser context (so the wasm and CSS come
// from the HTTP cache after the first, as for a user moving around the
// console); the first, cold run is reported apart. Prints one JSON object
// with --json, else a few lines. Stdlib + @playwright/test only.
import { chromium } from "@playwright/test";

function arg(name, dflt) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : dflt;
}
const url = arg("url");
const cookie = arg("cookie", "");
const runs = Number(arg("runs", "30"));
const asJson = process.argv.includes("--json");
const timeoutMs = Number(arg("timeout-ms", "30000"));
if (!url) {
  console.error("usage: hydration.mjs --url URL [--cookie NAME=VALUE] [--runs N] [--json]");
  process.exit(2);
}

// Before any page script: note when the mark appears (performance.now(),
// the same clock as the navigation timing entry).
const INIT = () => {
  // The <html> element may not exist yet when this runs: wait for it, then
  // watch its attribute.
  window.__hydratedAt = null;
  let watched = null;
  const seen = () => {
    const root = document.documentElement;
    if (!root || window.__hydratedAt !== null) return;
    if (root.getAttribute("data-hydrated") === "true") {
      window.__hydratedAt = performance.now();
    } else if (root !== watched) {
      watched = root;
      new MutationObserver(seen).observe(root, { attributes: true, attributeFilter: ["data-hydrated"] });
    }
  };
  new MutationObserver(seen).observe(document, { childList: true });
  seen();
};

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.round((s.length - 1) * p))];
};

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const out = { url, runs, samples: [] };
try {
  const context = await browser.newContext();
  if (cookie) {
    const [name, ...rest] = cookie.split("=");
    await context.addCookies([{ name, value: rest.join("="), url }]);
  }
  await context.addInitScript(INIT);
  const errors = [];
  for (let i = 0; i < runs + 1; i++) {
    const page = await context.newPage();
    page.on("pageerror", (e) => errors.push(e.message));
    const resp = await page.goto(url, { waitUntil: "load", timeout: timeoutMs });
    if (!resp || resp.status() !== 200) throw new Error(`${url} answered ${resp && resp.status()}`);
    if (new URL(page.url()).pathname.startsWith("/login")) throw new Error("not signed in: landed on /login");
    await page.waitForFunction(() => window.__hydratedAt !== null, null, { timeout: timeoutMs, polling: 5 });
    const t = await page.evaluate(() => {
      const nav = performance.getEntriesByType("navigation")[0];
      return {
        load: nav.loadEventStart,
        domContentLoaded: nav.domContentLoadedEventStart,
        responseEnd: nav.responseEnd,
        hydrated: window.__hydratedAt,
        islands: document.querySelectorAll("leptos-island").length,
      };
    });
    // Interactive once both the load event and the mark have happened.
    t.loadToInteractive = Math.max(0, t.hydrated - t.load);
    t.navToInteractive = t.hydrated;
    out.samples.push(t);
    await page.close();
  }
  if (errors.length) out.errors = errors;
} finally {
  await browser.close();
}
const [cold, ...warm] = out.samples;
const l2i = warm.map((s) => s.loadToInteractive);
const n2i = warm.map((s) => s.navToInteractive);
const load = warm.map((s) => s.load);
Object.assign(out, {
  cold_load_to_interactive_ms: cold.loadToInteractive,
  cold_nav_to_interactive_ms: cold.navToInteractive,
  p50_load_to_interactive_ms: pct(l2i, 0.5),
  p90_load_to_interactive_ms: pct(l2i, 0.9),
  p50_nav_to_interactive_ms: pct(n2i, 0.5),
  p90_nav_to_interactive_ms: pct(n2i, 0.9),
  p50_nav_to_load_ms: pct(load, 0.5),
  marked_before_load: warm.filter((s) => s.hydrated < s.load).length,
  islands: cold.islands,
});
if (asJson) {
  console.log(JSON.stringify(out));
} else {
  const f = (x) => `${x.toFixed(1)} ms`;
  console.log(`${url}: ${runs} warm runs (+1 cold), ${out.islands} islands`);
  console.log(`load event -> interactive: p50 ${f(out.p50_load_to_interactive_ms)}, p90 ${f(out.p90_load_to_interactive_ms)} (cold ${f(out.cold_load_to_interactive_ms)})`);
  console.log(`navigation -> interactive: p50 ${f(out.p50_nav_to_interactive_ms)}, p90 ${f(out.p90_nav_to_interactive_ms)}; navigation -> load p50 ${f(out.p50_nav_to_load_ms)}`);
}
