import { test, expect, newAccount, signUp, signIn, signOut, mailedLink, adminSetsQuota } from "./fixtures";

test("a forgotten password is reset through the mailed link, which then stops working", async ({ page, open }) => {
  const who = newAccount("reset");
  await signUp(page, open, who);
  await signOut(page);

  await page.getByRole("link", { name: "Forgot password?" }).click();
  await expect(page).toHaveURL(/\/forgot$/);
  await page.getByLabel("Account").fill(who.account);
  await page.getByLabel("Email").fill(who.email);
  await page.getByRole("button", { name: "Mail me a reset link" }).click();
  await expect(page.getByTestId("notice")).toContainText("a link to set a new password is on its way");

  const link = await mailedLink(who.email, "/reset");
  await page.goto(link);
  await page.getByLabel("New password").fill("short");
  await page.getByRole("button", { name: "Set password" }).click();
  await expect(page.locator("#password-error")).toContainText("at least 8 characters");
  await page.getByLabel("New password").fill("a freshly reset password");
  await page.getByRole("button", { name: "Set password" }).click();
  await expect(page).toHaveURL(/\/login\?reset=done$/);
  await expect(page.getByTestId("notice")).toContainText("Your password is set");

  // The old password no longer signs in; the new one does.
  await signIn(page, who);
  await expect(page.getByRole("alert")).toContainText("incorrect");
  await signIn(page, who, "a freshly reset password");
  await expect(page).toHaveURL(/\/jobs$/);

  // The link works once.
  await page.goto(link);
  await page.getByLabel("New password").fill("yet another password");
  await page.getByRole("button", { name: "Set password" }).click();
  await expect(page.getByRole("alert").first()).toContainText("This reset link is not valid");
});

test("a new account asks for its address to be confirmed until the mailed link is followed", async ({ page, open }) => {
  const who = newAccount("confirm");
  await signUp(page, open, who);
  await expect(page.getByTestId("confirm-email")).toContainText(`we sent a link to ${who.email}`);
  const link = await mailedLink(who.email, "/confirm");
  await page.goto(link);
  await page.getByRole("button", { name: "Confirm my email address" }).click();
  await expect(page).toHaveURL(/\/account\?email=confirmed$/);
  await expect(page.getByTestId("email-notice")).toHaveText("Your email address is confirmed.");
  await expect(page.getByTestId("email-state")).toHaveText(`${who.email} is confirmed.`);
  await expect(page.getByTestId("confirm-email")).toHaveCount(0);
});

test("changing the password needs the current one, and the audit log and its CSV record it", async ({ page, open }) => {
  const who = newAccount("chpw");
  await signUp(page, open, who);
  await open("/account");
  const form = page.getByTestId("password-form");
  await form.getByLabel("Current password").fill("not my password");
  await form.getByLabel("New password").fill("a changed password");
  await form.getByRole("button", { name: "Change password" }).click();
  await expect(page.locator("#current-error")).toHaveText("Your current password is not right.");

  await form.getByLabel("Current password").fill(who.password);
  await form.getByLabel("New password").fill("a changed password");
  await form.getByRole("button", { name: "Change password" }).click();
  await expect(page).toHaveURL(/\/account\?password=changed$/);
  await expect(page.getByTestId("password-notice")).toContainText("Every other session of yours has ended");
  await expect(page.getByTestId("audit-action").first()).toHaveText("password.changed");

  const href = await page.getByTestId("audit-csv").getAttribute("href");
  const csv = await page.request.get(href!);
  expect(csv.status()).toBe(200);
  const lines = (await csv.text()).trim().split("\n");
  expect(lines[0]).toBe("time_utc,actor,action,detail");
  expect(lines[1]).toContain(`${who.email},password.changed`);

  await signOut(page);
  await signIn(page, who, "a changed password");
  await expect(page).toHaveURL(/\/jobs$/);
});

test("only the site admin sets an account's quota, from the quota page", async ({ page, open, browser, baseURL }) => {
  const who = newAccount("quota-admin");
  await signUp(page, open, who);
  await open("/quota");
  await expect(page.getByTestId("quota-account")).toHaveText(who.account);
  // The owner sees the quota but has no form to raise it.
  await expect(page.getByTestId("quota-form")).toHaveCount(0);

  await adminSetsQuota(browser, baseURL, who.account, { cpu: "6" });

  await open("/quota");
  await expect(page.locator('.quota-bar[data-resource="cpu"]').getByTestId("quota-text")).toHaveText("0 of 6");
  await open("/account");
  await expect(page.getByTestId("audit-action").first()).toHaveText("quota.set");
});
