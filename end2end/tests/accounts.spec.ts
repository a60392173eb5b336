import { test, expect, newAccount, signUp, signIn, signOut } from "./fixtures";

const SECTIONS = ["Jobs", "Templates", "Environments", "Pipelines", "Experiments", "PaddleBoard", "Serving", "Datasets", "Models", "Notebooks", "Quota", "Account"];

test("a new user signs up and lands on their jobs inside the console shell", async ({ page, open }) => {
  const who = newAccount();
  await signUp(page, open, who);
  await expect(page.getByRole("heading", { level: 1 })).toHaveText("Jobs");
  const nav = page.getByRole("navigation", { name: "Main" });
  for (const label of SECTIONS) {
    await expect(nav.getByRole("link", { name: label, exact: true })).toBeVisible();
  }
  await expect(page.locator(".user-menu .account-name")).toHaveText(who.account);
  await expect(page.locator(".user-menu .email")).toHaveText(who.email);
});

test("the navigation reaches every section and marks the current one", async ({ page, open }) => {
  await signUp(page, open, newAccount());
  const nav = page.getByRole("navigation", { name: "Main" });
  for (const label of SECTIONS) {
    await nav.getByRole("link", { name: label, exact: true }).click();
    await expect(page.getByRole("heading", { level: 1 })).toHaveText(label);
    await expect(nav.getByRole("link", { name: label, exact: true })).toHaveAttribute("aria-current", "page");
  }
});

test("a signed-out visitor is sent to sign in and then to the page they asked for", async ({ page, open }) => {
  const who = newAccount();
  await signUp(page, open, who);
  await signOut(page);
  await open("/serving");
  await expect(page).toHaveURL(/\/login\?next=%2Fserving$/);
  await signIn(page, who);
  await expect(page).toHaveURL(/\/serving$/);
  await expect(page.getByRole("heading", { level: 1 })).toHaveText("Serving");
});

test("after signing out, console pages need signing in again", async ({ page, open }) => {
  await signUp(page, open, newAccount());
  await signOut(page);
  await open("/account");
  await expect(page).toHaveURL(/\/login\?next=%2Faccount$/);
  await expect(page.getByRole("heading", { level: 1 })).toHaveText("Sign in to PaddleCloud");
});

test("a wrong password is refused without saying which field was wrong", async ({ page, open }) => {
  const who = newAccount();
  await signUp(page, open, who);
  await signOut(page);
  await open("/login");
  await signIn(page, who, "not the password");
  await expect(page.getByRole("alert")).toHaveText("The account, email or password is incorrect.");
  await expect(page).toHaveURL(/\/login/);

  // An account that does not exist gets the very same words.
  await open("/login");
  await signIn(page, { ...who, account: `${who.account}-nope`.slice(0, 40) });
  await expect(page.getByRole("alert")).toHaveText("The account, email or password is incorrect.");
});

test("a taken account name and a short password are shown next to their fields", async ({ page, open }) => {
  const who = newAccount();
  await signUp(page, open, who);
  await signOut(page);

  await open("/signup");
  await page.getByLabel("Account name").fill(who.account.toUpperCase());
  await page.getByLabel("Email").fill("someone@example.com");
  await page.getByLabel("Password", { exact: true }).fill("long enough password");
  await page.getByRole("button", { name: "Create account" }).click();
  await expect(page.locator("#account-error")).toContainText("is taken");
  await expect(page).toHaveURL(/\/signup/);

  await open("/signup");
  await page.getByLabel("Account name").fill(newAccount().account);
  await page.getByLabel("Email").fill("someone@example.com");
  await page.getByLabel("Password", { exact: true }).fill("short");
  await page.getByRole("button", { name: "Create account" }).click();
  await expect(page.locator("#password-error")).toHaveText("Password must be at least 8 characters.");
  await expect(page).toHaveURL(/\/signup/);
});

test("the password Show button works once the page has hydrated", async ({ page, open, hydrated }) => {
  test.skip(!hydrated, "the button is a hydrated control; without JavaScript it does nothing by design");
  await open("/login");
  const password = page.getByLabel("Password", { exact: true });
  await password.fill("secret words");
  await expect(password).toHaveAttribute("type", "password");
  await page.getByRole("button", { name: "Show" }).click();
  await expect(password).toHaveAttribute("type", "text");
  await expect(page.getByRole("button", { name: "Hide" })).toHaveAttribute("aria-pressed", "true");
});

test("revoking a session on the Account page signs that browser out", async ({ page, open, browser, hydrated }) => {
  const who = newAccount();
  await signUp(page, open, who);

  const laptop = await browser.newContext({ javaScriptEnabled: hydrated, userAgent: "Laptop Browser 1.0" });
  const other = await laptop.newPage();
  await other.goto(`${process.env.PADDLECLOUD_URL}/login`);
  await signIn(other, who);
  await expect(other).toHaveURL(/\/jobs$/);

  await open("/account");
  await expect(page.getByTestId("account-name")).toHaveText(who.account);
  const sessions = page.getByTestId("sessions");
  await expect(sessions.locator("tbody tr")).toHaveCount(2);
  await expect(sessions.locator("tr", { hasText: "this browser" })).toHaveCount(1);
  await sessions.locator("tr", { hasText: "Laptop Browser 1.0" }).getByRole("button", { name: "Revoke" }).click();
  await expect(sessions.locator("tbody tr")).toHaveCount(1);

  await other.goto(`${process.env.PADDLECLOUD_URL}/jobs`);
  await expect(other).toHaveURL(/\/login\?next=%2Fjobs$/);
  await laptop.close();
});
