import { test as base, expect, Browser, Locator, Page } from "@playwright/test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { SITE_ADMIN } from "../global-setup";

/** The console's site admin (made by global setup before it starts). */
export const siteAdmin: AccountDetails = SITE_ADMIN;

/** A fresh account's details; unique per call so tests never collide. */
export function newAccount(prefix = "t") {
  const id = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 7)}`;
  return {
    account: `${prefix}-${id}`.slice(0, 40),
    email: `owner-${id}@example.com`,
    password: `correct horse ${id}`,
  };
}
export type AccountDetails = ReturnType<typeof newAccount>;

type Fixtures = {
  /** Whether this project runs with JavaScript (and so hydration) on. */
  hydrated: boolean;
  /** Opens a path and, when JavaScript is on, waits until the page has hydrated. */
  open: (path: string) => Promise<void>;
};

export const test = base.extend<Fixtures>({
  baseURL: async ({}, use) => {
    const url = process.env.PADDLECLOUD_URL;
    if (!url) throw new Error("PADDLECLOUD_URL is not set: global-setup did not start a server");
    await use(url);
  },
  hydrated: async ({ javaScriptEnabled }, use) => {
    await use(javaScriptEnabled !== false);
  },
  // Any console error or uncaught exception fails the test: a broken wasm
  // bundle shows up here even when the HTML looks right.
  page: async ({ page }, use) => {
    const errors: string[] = [];
    page.on("console", (msg) => {
      // A refused form (4xx) is logged by the browser as a failed load; the
      // tests check that the page shows it. Server errors (5xx) still fail.
      const expected = /Failed to load resource: the server responded with a status of 4\d\d/;
      // A notebook version's page has no script and is framed with scripts
      // off; what the browser blocks there is Playwright's own per-frame
      // script (the page itself is checked to hold none).
      const framedVersion =
        /^Blocked script execution in '[^']*\/api\/v1\/(notebooks\/[^'/]+\/versions\/\d+|jobs\/[^'/]+\/notebook\/output)\/html(#[^']*)?' because the document's frame is sandboxed/;
      if (msg.type() === "error" && !expected.test(msg.text()) && !framedVersion.test(msg.text()))
        errors.push(`console: ${msg.text()}`);
    });
    page.on("pageerror", (err) => errors.push(`pageerror: ${err.message}`));
    await use(page);
    expect(errors, "the browser reported errors").toEqual([]);
  },
  open: async ({ page, hydrated }, use) => {
    await use(async (path: string) => {
      await page.goto(path);
      if (hydrated) await waitHydrated(page);
    });
  },
});

/** Waits for the mark the app sets once hydration has wired up the page. */
export async function waitHydrated(page: Page) {
  await expect(page.locator("html")).toHaveAttribute("data-hydrated", "true");
}

/** Fills and submits the sign-up form; lands on /jobs. */
export async function signUp(page: Page, open: (p: string) => Promise<void>, who: AccountDetails) {
  await open("/signup");
  await page.getByLabel("Account name").fill(who.account);
  await page.getByLabel("Email").fill(who.email);
  await page.getByLabel("Password", { exact: true }).fill(who.password);
  await page.getByRole("button", { name: "Create account" }).click();
  await expect(page).toHaveURL(/\/jobs$/);
}

/** Fills and submits the sign-in form. */
export async function signIn(page: Page, who: AccountDetails, password = who.password) {
  await page.getByLabel("Account").fill(who.account);
  await page.getByLabel("Email").fill(who.email);
  await page.getByLabel("Password", { exact: true }).fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
}

/** Signs out through the user menu (a <details>, so it works without JavaScript). */
export async function signOut(page: Page) {
  await page.locator(".user-menu summary").click();
  await page.getByRole("button", { name: "Sign out" }).click();
  await expect(page).toHaveURL(/\/login/);
}

/**
 * The site admin, in a browser of its own, sets `account`'s quota on the
 * account's quota page (`/quota?account=…`), the only way it can be raised.
 */
export async function adminSetsQuota(
  browser: Browser,
  baseURL: string | undefined,
  account: string,
  fields: { cpu?: string; memory?: string; jobs?: string },
) {
  const context = await browser.newContext({ baseURL });
  const admin = await context.newPage();
  await admin.goto("/login");
  await signIn(admin, siteAdmin);
  await expect(admin).toHaveURL(/\/jobs$/);
  await admin.goto(`/quota?account=${account}`);
  await expect(admin.getByTestId("quota-account")).toHaveText(account);
  const form = admin.getByTestId("quota-form");
  if (fields.cpu !== undefined) await form.getByLabel("CPU (cores)").fill(fields.cpu);
  if (fields.memory !== undefined) await form.getByLabel("Memory").fill(fields.memory);
  if (fields.jobs !== undefined) await form.getByLabel("Jobs at once").fill(fields.jobs);
  await form.getByRole("button", { name: "Save quota" }).click();
  if (fields.cpu !== undefined) {
    await expect(admin.locator('.quota-bar[data-resource="cpu"]').getByTestId("quota-text")).toHaveText(
      `0 of ${fields.cpu}`,
    );
  }
  await context.close();
}

/**
 * The newest link to `path` (`/reset`, `/confirm`) in mail the console wrote
 * to its outbox for `email`, waiting up to 10 s for it. Quoted-printable soft
 * breaks and escapes are undone, as a mail reader would.
 */
export async function mailedLink(email: string, path: string): Promise<string> {
  const dir = join(process.env.PADDLECLOUD_E2E_DATA_DIR ?? "", "outbox");
  let found: string | undefined;
  await expect(async () => {
    const files = readdirSync(dir)
      .filter((f) => f.endsWith(".eml"))
      .map((f) => join(dir, f))
      .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
    for (const file of files) {
      const text = readFileSync(file, "utf8").replace(/=\r?\n/g, "").replace(/=3D/g, "=");
      if (!text.includes(`To: ${email}`)) continue;
      const match = text.match(new RegExp(`https?://[^\\s"<]+${path}\\?token=[0-9a-f]{64}`));
      if (match) {
        found = match[0];
        return;
      }
    }
    throw new Error(`no mail with a ${path} link for ${email} in ${dir}`);
  }).toPass({ timeout: 10_000 });
  return found!;
}

export { expect };

/**
 * Waits for `target` (in a live table) to read `text`: hydrated pages update
 * it themselves, without JavaScript the page is reloaded to see it.
 */
export async function expectLive(page: Page, hydrated: boolean, target: Locator, text: string | RegExp, timeout = 20_000) {
  if (hydrated) {
    await expect(target).toHaveText(text, { timeout });
  } else {
    await expect(async () => {
      await page.reload();
      await expect(target).toHaveText(text, { timeout: 1000 });
    }).toPass({ timeout });
  }
}

/**
 * Presses a form's button. Without JavaScript the form posts and redirects
 * back: waits for that page to load, so that a reload does not race it.
 */
export async function press(page: Page, hydrated: boolean, button: Locator) {
  if (hydrated) {
    await button.click();
  } else {
    await Promise.all([page.waitForEvent("load"), button.click()]);
  }
}

/**
 * Opens real JupyterLab at `href` in a page of its own (its console
 * messages are not the console's), starts a notebook from the launcher,
 * waits until its kernel (shown as `kernel`, e.g. "Python 3 (ipykernel)")
 * is idle, runs `code` in the first cell and waits for `printed` among the
 * cell's outputs.
 */
export async function runInLab(page: Page, href: string, kernel: string, code: string, printed: string) {
  const lab = await page.context().newPage();
  await lab.goto(href);
  const card = lab.locator('.jp-LauncherCard[data-category="Notebook"]').first();
  await expect(card).toBeVisible({ timeout: 60_000 });
  await card.click();
  const editor = lab.locator(".jp-Notebook .jp-Cell .cm-content").first();
  await expect(editor).toBeVisible({ timeout: 30_000 });
  // A cell run before the kernel is connected is not run: wait until it is idle.
  await expect(lab.getByText(`${kernel} | Idle`)).toBeVisible({ timeout: 120_000 });
  await editor.click();
  await lab.keyboard.insertText(code);
  await lab.keyboard.press("Shift+Enter");
  // Among the outputs: a library may warn on stderr first.
  await expect(lab.locator(".jp-OutputArea").first()).toContainText(printed, { timeout: 120_000 });
  await lab.close();
}

/**
 * Without JavaScript JupyterLab cannot run, but its page at `href` is
 * served through the console with the session alone.
 */
export async function expectLabPageServed(page: Page, href: string) {
  const res = await page.request.get(href);
  expect(res.status()).toBe(200);
  expect(await res.text()).toContain("JupyterLab");
}

/** Notebook `name`, made through the REST API with `page`'s session, running. */
export async function runningNotebook(page: Page, name: string) {
  const made = await page.request.post("/api/v1/notebooks", {
    data: { name, resources: { cpu: "500m", memory: "1Gi", gpu: 0 } },
  });
  expect(made.status()).toBe(201);
  await expect
    .poll(async () => (await (await page.request.get(`/api/v1/notebooks/${name}`)).json()).status, { timeout: 90_000 })
    .toBe("running");
}
