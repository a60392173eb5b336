import { resolve } from "node:path";
import { BrowserContext, Page, TestInfo } from "@playwright/test";
import { test, expect, newAccount, signIn, signUp, siteAdmin, waitHydrated } from "./fixtures";

// Light, dark and system themes (docs/themes.md): every page in light and in
// dark (screenshots under test-results, no golden images: the suite does no
// visual comparison), what a user would check of the colours, the chooser
// remembering, "system" following the browser, and the server-drawn charts.

const SDK = resolve(__dirname, "../../sdk/python");
const COOKIE = "paddlecloud_theme";
type Theme = "light" | "dark" | "system";

/** The page background and text colour of each theme (style/main.css). */
const PALETTE = {
  light: { bg: "rgb(246, 247, 251)", ink: "rgb(27, 31, 42)" },
  dark: { bg: "rgb(14, 19, 28)", ink: "rgb(228, 232, 240)" },
};

/** Remembers `theme` in the browser's cookie, as the chooser does. */
async function rememberTheme(context: BrowserContext, baseURL: string, theme: Theme) {
  await context.addCookies([{ name: COOKIE, value: theme, url: baseURL }]);
}

/** The colours `<html>` is drawn in, and the theme it says it is in. */
async function pageColours(page: Page) {
  return page.evaluate(() => {
    const style = getComputedStyle(document.documentElement);
    return {
      theme: document.documentElement.getAttribute("data-theme"),
      bg: style.backgroundColor,
      ink: style.color,
    };
  });
}

async function expectTheme(page: Page, theme: "light" | "dark") {
  await expect.poll(() => pageColours(page).then(({ bg, ink }) => ({ bg, ink }))).toEqual(PALETTE[theme]);
}

/**
 * Text on the page whose contrast with what is behind it is below WCAG AA
 * (4.5:1, 3:1 for large text): tables, forms, badges, banners, the log
 * console, code. Each as `element "text" ratio`.
 */
async function lowContrast(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    type Rgba = [number, number, number, number];
    const parse = (c: string): Rgba | null => {
      const m = /rgba?\(([^)]+)\)/.exec(c);
      if (!m) return null;
      const p = m[1].split(/[\s,/]+/).filter(Boolean).map(Number);
      return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
    };
    const luminance = ([r, g, b]: Rgba) => {
      const f = (v: number) => {
        const s = v / 255;
        return s <= 0.03928 ? s / 12.92 : Math.pow((s + 0.055) / 1.055, 2.4);
      };
      return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
    };
    const over = (top: Rgba, under: Rgba): Rgba => {
      const a = top[3];
      return [0, 1, 2].map((i) => top[i] * a + under[i] * (1 - a)).concat(1) as Rgba;
    };
    // What is drawn behind `el`: its and its ancestors' backgrounds, blended.
    const behind = (el: Element): Rgba => {
      const layers: Rgba[] = [];
      for (let e: Element | null = el; e; e = e.parentElement) {
        const c = parse(getComputedStyle(e).backgroundColor);
        if (c && c[3] > 0) {
          layers.push(c);
          if (c[3] >= 1) break;
        }
      }
      let out: Rgba = [255, 255, 255, 1];
      for (const layer of layers.reverse()) out = over(layer, out);
      return out;
    };
    const selector = [
      "main *", ".auth *", ".modal *", ".log-console *", ".topbar a", ".topbar summary *", ".theme-chooser button",
    ].join(", ");
    const failures: string[] = [];
    for (const el of Array.from(document.querySelectorAll(selector)).slice(0, 1500)) {
      if (el.closest("svg") || (el as HTMLButtonElement).disabled) continue;
      const field = ["INPUT", "SELECT", "TEXTAREA"].includes(el.tagName) && (el as HTMLInputElement).type !== "hidden"
        && (el as HTMLInputElement).type !== "checkbox" && (el as HTMLInputElement).type !== "radio"
        && (el as HTMLInputElement).type !== "range" && (el as HTMLInputElement).type !== "file";
      const text = Array.from(el.childNodes)
        .filter((n) => n.nodeType === Node.TEXT_NODE)
        .map((n) => n.textContent ?? "")
        .join("")
        .trim();
      if (!field && !text) continue;
      const box = el.getBoundingClientRect();
      const style = getComputedStyle(el);
      if (box.width <= 1 || box.height <= 1 || style.visibility === "hidden" || style.opacity === "0") continue;
      const ink = parse(style.color);
      if (!ink) continue;
      const bg = behind(el);
      const [a, b] = [luminance(over(ink, bg)), luminance(bg)];
      const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
      const size = parseFloat(style.fontSize);
      const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700);
      if (ratio < (large ? 3 : 4.5)) {
        failures.push(`${el.tagName.toLowerCase()}.${el.className} "${(text || "(field)").slice(0, 30)}" ${ratio.toFixed(2)}:1`);
      }
    }
    return failures;
  });
}

/** A job that charts a falling loss with the SDK, `steps` points `every` s apart. */
async function submitCurve(page: Page, name: string, steps: number, every: number) {
  const program = [
    "import time, paddlecloud",
    `for step in range(${steps}):`,
    "    paddlecloud.draw_board(10.0 / (step + 1), 'train/loss')",
    "    paddlecloud.flush_board()",
    "    print('step', step, flush=True)",
    `    time.sleep(${every})`,
  ].join("\n");
  const res = await page.request.post("/api/v1/jobs", {
    data: { name, command: ["python3", "-c", program], num_trainers: 1, env: [{ name: "PYTHONPATH", value: SDK }] },
  });
  expect(res.status(), await res.text()).toBe(201);
}

async function waitStatus(page: Page, name: string, status: string) {
  await expect(async () => {
    const job = await (await page.request.get(`/api/v1/jobs/${name}`)).json();
    expect(job.status).toBe(status);
  }).toPass({ timeout: 60_000 });
}

/**
 * The fill of a chart's labels and of its background, as drawn. Read in one
 * evaluation: a live region may swap the SVG at any moment, and a detached
 * element has no computed style.
 */
async function chartColours(page: Page, chart: string) {
  return page.evaluate((selector) => {
    const svg = document.querySelector(selector);
    const [text, rect] = [svg?.querySelector("text"), svg?.querySelector("rect")];
    return { text: text ? getComputedStyle(text).fill : "", bg: rect ? getComputedStyle(rect).fill : "" };
  }, chart);
}

/** Relative luminance of `rgb(r, g, b)`, 0 (black) to 1 (white). */
function luminance(rgb: string) {
  const [r, g, b] = (/rgba?\(([^)]+)\)/.exec(rgb)?.[1] ?? "0,0,0").split(/[\s,]+/).map(Number);
  const f = (v: number) => {
    const s = v / 255;
    return s <= 0.03928 ? s / 12.92 : Math.pow((s + 0.055) / 1.055, 2.4);
  };
  return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
}

function slug(path: string) {
  return path.replace(/^\//, "").replace(/[^a-z0-9]+/gi, "_").replace(/_+$/, "") || "root";
}

async function visit(page: Page, hydrated: boolean, path: string, theme: "light" | "dark", info: TestInfo) {
  const res = await page.goto(path);
  if (hydrated) await waitHydrated(page);
  const colours = await pageColours(page);
  // What came back, if it is not the page: its status and its first words.
  const got = `${res?.status()} ${res?.url()}: ${(await page.content()).slice(0, 300)}`;
  expect(colours.theme, `${path}: the server rendered the remembered theme (got ${got})`).toBe(theme);
  expect({ bg: colours.bg, ink: colours.ink }, `${path} in ${theme}`).toEqual(PALETTE[theme]);
  expect(await lowContrast(page), `${path} in ${theme}: text below WCAG AA contrast`).toEqual([]);
  await page.screenshot({ path: info.outputPath(theme, `${slug(path)}.png`), fullPage: true });
}

test("every page renders in light and in dark, readable, with the theme's background and text", async ({
  page, open, hydrated, context, baseURL, browser, javaScriptEnabled,
}, info) => {
  test.setTimeout(300_000);
  const who = newAccount("themes");
  await signUp(page, open, who);
  const owner = who.account;

  // Something on every page: a finished job with a chart, a dataset shared
  // by link, a model, a pipeline.
  await submitCurve(page, "curve", 12, 0.1);
  for (const kind of ["datasets", "models"]) {
    const made = await page.request.post(`/api/v1/${kind}`, { data: { name: "faces", description: "Faces, cropped" } });
    expect(made.status(), await made.text()).toBe(201);
  }
  const link = await page.request.post(`/api/v1/datasets/${owner}/faces/shares`, { data: { link: true } });
  expect(link.status(), await link.text()).toBe(201);
  const shared = (await link.json()).path as string;
  const pipeline = await page.request.post("/api/v1/pipelines", {
    data: { name: "nightly", pipeline: { name: "nightly", nodes: [
      { name: "prep", job: { command: ["sh", "-c", "echo prepared"], num_trainers: 1, trainer: { cpu: "100m", memory: "64Mi" } } },
    ] } },
  });
  expect(pipeline.status(), await pipeline.text()).toBe(201);
  // An experiment of two trials, for its page's charts and table.
  const dip = await page.request.post("/api/v1/templates", {
    data: {
      name: "dip",
      parameters: [{ name: "x", type: "float", min: 0, max: 1, default: 0.5 }],
      job: {
        command: ["python3", "-c", "import paddlecloud\nfor i in range(3):\n    paddlecloud.draw_board(({{x}} - 0.3) ** 2 + 1 / (i + 1), 'loss', step=i)\nassert paddlecloud.flush_board()\n"],
        num_trainers: 1, trainer: { cpu: "100m", memory: "128Mi" }, env: [{ name: "PYTHONPATH", value: SDK }],
      },
    },
  });
  expect(dip.status(), await dip.text()).toBe(201);
  const schedule = await page.request.post("/api/v1/schedules", {
    data: { name: "nightly-dip", cron: "0 3 * * 1-5", timezone: "Europe/Berlin", target: { kind: "template", name: "dip" } },
  });
  expect(schedule.status(), await schedule.text()).toBe(201);
  const search = await page.request.post("/api/v1/experiments", {
    data: {
      name: "dip-search", template: "dip", algorithm: { type: "random" }, max_trials: 2, parallel_trials: 2,
      parameters: [{ name: "x", type: "float", min: 0, max: 1 }], objective: { metric: "loss", direction: "minimize" },
    },
  });
  expect(search.status(), await search.text()).toBe(201);
  await waitStatus(page, "curve", "succeeded");
  await expect(async () => {
    const e = await (await page.request.get("/api/v1/experiments/dip-search")).json();
    expect(e.status).toBe("succeeded");
  }).toPass({ timeout: 90_000 });

  await open("/templates");
  const template = await page.locator('main a[href^="/templates/"]').first().getAttribute("href");
  await open("/environments");
  const environment = await page.locator('main a[href^="/environments/"]').first().getAttribute("href");
  expect(template && environment).toBeTruthy();

  // Every route of app/src/routes.rs, with its dialogs and the log console, but
  // a notebook file's history, run and diff pages and a shared notebook's (they
  // need a notebook server's files: notebook_history and notebook_shares specs).
  const signedIn = [
    "/jobs", "/jobs?submit=1", "/jobs?log=curve", "/jobs/curve", "/jobs/dip-search-t1", "/jobs?submit=1&from=curve",
    "/jobs/curve/resources", "/jobs/curve/template",
    "/templates", template!, "/environments", environment!, "/pipelines", "/pipelines/nightly", "/schedules", "/schedules/nightly-dip",
    "/experiments", "/experiments/dip-search", "/experiments/new", "/jobs/compare?jobs=dip-search-t1,dip-search-t2",
    "/scorings/new?model=faces&dataset=faces", "/paddleboard?job=curve", "/serving", "/serving?launch=1", "/serving/none",
    "/datasets", "/datasets?new=1", `/datasets/${owner}/faces`, `/datasets/${owner}/faces/settings`,
    "/models", `/models/${owner}/faces`, `/models/${owner}/faces/settings`,
    "/notebooks", "/notebooks?new=1", "/notebooks/shared", "/quota", "/queue", "/account", "/account/audit",
    "/notifications", "/alerts", "/secrets", `/lineage?node=${encodeURIComponent(`job:${owner}/curve`)}`,
  ];
  const signedOut = ["/login", "/signup", "/forgot", "/reset?token=0", "/confirm?token=0", "/join?token=0", shared, "/no-such-page"];
  const admin = await browser.newContext({ baseURL, javaScriptEnabled });
  const adminPage = await admin.newPage();
  await adminPage.goto("/login");
  await signIn(adminPage, siteAdmin);
  await expect(adminPage).toHaveURL(/\/jobs$/);
  const guest = await browser.newContext({ baseURL, javaScriptEnabled });
  const guestPage = await guest.newPage();

  for (const theme of ["light", "dark"] as const) {
    for (const ctx of [context, admin, guest]) await rememberTheme(ctx, baseURL!, theme);
    for (const path of signedIn) await visit(page, hydrated, path, theme, info);
    await visit(adminPage, hydrated, "/admin", theme, info);
    for (const path of signedOut) await visit(guestPage, hydrated, path, theme, info);
  }
  await admin.close();
  await guest.close();
});

test("the header's chooser switches the theme and it is remembered across a reload and on the next page", async ({
  page, open, hydrated,
}) => {
  await signUp(page, open, newAccount("chooser"));
  await open("/jobs?status=failed");
  // A first visit follows the system (Playwright's is light).
  const chooser = page.getByTestId("theme-chooser");
  await expect(chooser.getByRole("button", { name: "System" })).toHaveAttribute("aria-pressed", "true");
  await expectTheme(page, "light");

  const dark = chooser.getByRole("button", { name: "Dark" });
  if (hydrated) {
    await dark.click();
  } else {
    // A plain form: it posts, and the server sends the browser back.
    await Promise.all([page.waitForEvent("load"), dark.click()]);
  }
  await expect(page).toHaveURL(/\/jobs\?status=failed$/);
  await expect(page.locator("html")).toHaveAttribute("data-theme", "dark");
  await expect(dark).toHaveAttribute("aria-pressed", "true");
  await expect(chooser.getByRole("button", { name: "System" })).toHaveAttribute("aria-pressed", "false");
  await expectTheme(page, "dark");

  await page.reload();
  await expectTheme(page, "dark");
  await open("/quota");
  await expectTheme(page, "dark");
  await expect(page.getByTestId("theme-chooser").getByRole("button", { name: "Dark" })).toHaveAttribute("aria-pressed", "true");

  const light = page.getByTestId("theme-chooser").getByRole("button", { name: "Light" });
  if (hydrated) await light.click();
  else await Promise.all([page.waitForEvent("load"), light.click()]);
  await expectTheme(page, "light");
  await open("/jobs");
  await expect(page.locator("html")).toHaveAttribute("data-theme", "light");
  // Light stays light in a dark system: the choice beats the system's.
  await page.emulateMedia({ colorScheme: "dark" });
  await expectTheme(page, "light");
});

test("the chooser's form refuses a theme it does not know and never sends the browser to another site", async ({
  page, baseURL,
}) => {
  const refused = await page.request.post("/theme", { form: { theme: "neon", back: "/jobs" }, maxRedirects: 0 });
  expect(refused.status()).toBe(400);
  const away = await page.request.post("/theme", { form: { theme: "dark", back: "//evil.example/" }, maxRedirects: 0 });
  expect(away.status()).toBe(303);
  expect(away.headers()["location"]).toBe("/jobs");
  expect(away.headers()["set-cookie"]).toContain(`${COOKIE}=dark; Path=/; Max-Age=31536000; SameSite=Lax`);
  expect(baseURL).toBeTruthy();
});

test("system follows the browser's colour scheme, with the same dark palette as dark", async ({
  page, context, baseURL,
}) => {
  await rememberTheme(context, baseURL!, "system");
  await page.emulateMedia({ colorScheme: "dark" });
  await page.goto("/login");
  await expect(page.locator("html")).toHaveAttribute("data-theme", "system");
  await expectTheme(page, "dark");
  await page.emulateMedia({ colorScheme: "light" });
  await expectTheme(page, "light");

  // Every custom property the dark theme sets has the same value under a
  // dark system (style/main.css writes that palette twice).
  const read = () => page.evaluate(() => {
    const names = new Set<string>();
    for (const sheet of Array.from(document.styleSheets)) {
      for (const rule of Array.from(sheet.cssRules)) {
        if (rule instanceof CSSStyleRule && rule.selectorText === ':root[data-theme="dark"]') {
          for (const name of Array.from(rule.style)) names.add(name);
        }
      }
    }
    const style = getComputedStyle(document.documentElement);
    return Object.fromEntries(Array.from(names).sort().map((n) => [n, style.getPropertyValue(n).trim()]));
  });
  await page.emulateMedia({ colorScheme: "dark" });
  const system = await read();
  expect(Object.keys(system).length).toBeGreaterThan(40);
  await rememberTheme(context, baseURL!, "dark");
  await page.reload();
  await expect(page.locator("html")).toHaveAttribute("data-theme", "dark");
  expect(await read()).toEqual(system);
});

test("a chart's labels are light on dark in dark, dark on light in light, and stay so after a live refresh", async ({
  page, open, hydrated, context, baseURL,
}) => {
  test.setTimeout(120_000);
  await signUp(page, open, newAccount("chart"));
  await submitCurve(page, "slow", 60, 0.5);
  const chart = 'article[data-tag="train/loss"] .chart-svg svg';
  await expect(async () => {
    await page.goto("/paddleboard?job=slow");
    await expect(page.locator(chart)).toBeVisible({ timeout: 1000 });
  }).toPass({ timeout: 30_000 });

  const check = async (theme: "light" | "dark") => {
    let colours = { text: "", bg: "" };
    await expect.poll(async () => {
      colours = await chartColours(page, chart);
      return colours.text.startsWith("rgb") && colours.bg.startsWith("rgb");
    }).toBe(true);
    const { text, bg } = colours;
    if (theme === "dark") {
      expect(luminance(text), `labels ${text} on ${bg}`).toBeGreaterThan(0.4);
      expect(luminance(bg), `background ${bg}`).toBeLessThan(0.05);
    } else {
      expect(luminance(text), `labels ${text} on ${bg}`).toBeLessThan(0.2);
      expect(luminance(bg), `background ${bg}`).toBeGreaterThan(0.9);
    }
  };
  await check("light");
  await rememberTheme(context, baseURL!, "dark");
  await open("/paddleboard?job=slow");
  await check("dark");
  // The same SVG under "system" follows the browser, with no new render.
  await rememberTheme(context, baseURL!, "system");
  await page.emulateMedia({ colorScheme: "dark" });
  await open("/paddleboard?job=slow");
  await check("dark");
  await page.emulateMedia({ colorScheme: "light" });
  await check("light");
  await page.emulateMedia({ colorScheme: "dark" });

  if (hydrated) {
    // The live region swaps in the server's new SVG as points arrive: mark
    // this one and wait for another.
    await page.locator(chart).evaluate((svg) => svg.setAttribute("data-seen", ""));
    await expect(page.locator(`${chart}:not([data-seen])`)).toBeVisible({ timeout: 30_000 });
    await check("dark");
  } else {
    await page.reload();
    await check("dark");
  }
});
