import type { Browser, Page } from "@playwright/test";
import { test, expect, newAccount, signUp, mailedLink, siteAdmin, signIn } from "./fixtures";

/** The owner's Account page: invites `email` with `role`. */
async function invite(page: Page, open: (p: string) => Promise<void>, email: string, role: string) {
  await open("/account");
  const form = page.getByTestId("invite-form");
  await form.getByLabel("Email").fill(email);
  await form.getByRole("combobox").selectOption(role);
  await form.getByRole("button", { name: "Send invitation" }).click();
  await expect(page.getByTestId("invite-notice")).toContainText(`Invitation sent to ${email}`);
  await expect(page.getByTestId("invitations")).toContainText(email);
}

/** The invitee, in a browser of their own, follows the mailed link and joins. */
async function accept(browser: Browser, baseURL: string | undefined, hydrated: boolean, email: string, account: string, role: string) {
  const context = await browser.newContext({ baseURL, javaScriptEnabled: hydrated });
  const page = await context.newPage();
  await page.goto(await mailedLink(email, "/join"));
  await expect(page.getByTestId("invitation")).toContainText(`invited ${email} to the account “${account}” as ${role}.`);
  await page.getByLabel("Choose a password").fill("the invitee's password");
  await page.getByRole("button", { name: `Join ${account}` }).click();
  await expect(page).toHaveURL(/\/jobs$/);
  return page;
}

/** Fills the submit dialog with a quick trainer-only job. */
async function submit(page: Page, name: string, trainers = "1") {
  await page.goto("/jobs?submit=1");
  const dialog = page.getByRole("dialog", { name: "Submit a training job" });
  await expect(dialog).toBeVisible();
  await dialog.getByLabel("Name").fill(name);
  await dialog.getByLabel("Command").fill("true");
  await dialog.getByLabel("Count").first().fill("0");
  await dialog.getByLabel("Count").nth(1).fill(trainers);
  await dialog.getByRole("button", { name: "Submit" }).click();
  return dialog;
}

test("an owner invites a member and a viewer: the member submits a job, the viewer only looks", async ({
  page,
  browser,
  baseURL,
  open,
  hydrated,
}) => {
  const owner = newAccount("team");
  await signUp(page, open, owner);
  const id = owner.account.slice(5);
  const memberEmail = `member-${id}@example.com`;
  const viewerEmail = `viewer-${id}@example.com`;
  await invite(page, open, memberEmail, "member");
  await invite(page, open, viewerEmail, "viewer");

  // The member joins with the link and submits a job, which the owner sees.
  const member = await accept(browser, baseURL, hydrated, memberEmail, owner.account, "member");
  const dialog = await submit(member, "from-member");
  await expect(dialog).toBeHidden();
  await expect(member.locator('tr[data-job="from-member"]')).toBeVisible();
  await open("/jobs");
  await expect(page.locator('tr[data-job="from-member"]')).toBeVisible();

  // The viewer sees the same table, is told what a viewer is, and is refused.
  const viewer = await accept(browser, baseURL, hydrated, viewerEmail, owner.account, "viewer");
  await expect(viewer.getByTestId("viewer-banner")).toContainText(`You are a viewer of ${owner.account}`);
  await expect(viewer.locator('tr[data-job="from-member"]')).toBeVisible();
  await submit(viewer, "from-viewer");
  await expect(viewer.getByRole("alert").first()).toContainText("Viewers can look but not change anything");
  await viewer.goto("/jobs");
  await expect(viewer.locator('tr[data-job="from-viewer"]')).toHaveCount(0);

  // The owner sees who is in, in what role, and the audit log says how.
  await open("/account");
  const roles = page.getByTestId("members").getByTestId("member-role");
  await expect(roles).toHaveText(["owner", "member", "viewer"]);
  await expect(page.getByTestId("invitations")).toHaveCount(0);
  await expect(page.getByTestId("audit-action").filter({ hasText: "member.joined" })).toHaveCount(2);

  // The owner makes the viewer a member; the next page load says so.
  const viewerRow = page.getByTestId("member").filter({ hasText: viewerEmail });
  await viewerRow.getByRole("combobox").selectOption("member");
  await viewerRow.getByRole("button", { name: "Change role" }).click();
  await expect(page.getByTestId("member").filter({ hasText: viewerEmail }).getByTestId("member-role")).toHaveText(
    "member",
  );
  await viewer.goto("/jobs");
  await expect(viewer.getByTestId("viewer-banner")).toHaveCount(0);

  // The owner caps the member at one CPU; the member's next big job is refused.
  const memberRow = page.getByTestId("member").filter({ hasText: memberEmail });
  await memberRow.getByText("Set caps…").click();
  await memberRow.getByLabel("CPU").fill("1");
  await memberRow.getByRole("button", { name: "Save caps" }).click();
  await expect(page.getByTestId("member").filter({ hasText: memberEmail }).getByTestId("member-caps")).toContainText(
    "CPU 1, memory no limit",
  );
  await submit(member, "too-big", "2");
  await expect(member.getByRole("alert").first()).toContainText("Over your cap in this account");
});

test("a user of two accounts switches between them in the header", async ({ page, open, browser, baseURL, hydrated }) => {
  const first = newAccount("one");
  await signUp(page, open, first);
  const second = newAccount("two");
  // The same person signs up a second account with the same address and password.
  const context = await browser.newContext({ baseURL, javaScriptEnabled: hydrated });
  const other = await context.newPage();
  await other.goto("/signup");
  await other.getByLabel("Account name").fill(second.account);
  await other.getByLabel("Email").fill(first.email);
  await other.getByLabel("Password", { exact: true }).fill(first.password);
  await other.getByRole("button", { name: "Create account" }).click();
  await expect(other).toHaveURL(/\/jobs$/);
  await context.close();

  await open("/jobs");
  await page.locator(".user-menu summary").click();
  const switcher = page.getByTestId("account-switcher");
  await switcher.getByRole("button", { name: `${second.account} (owner)` }).click();
  await expect(page).toHaveURL(/\/jobs$/);
  await expect(page.locator(".user-menu .account-name")).toHaveText(second.account);
});

test("the site admin sees every account with its use of its quota", async ({ browser, baseURL, page, open }) => {
  const who = newAccount("seen");
  await signUp(page, open, who);
  const context = await browser.newContext({ baseURL });
  const admin = await context.newPage();
  await admin.goto("/login");
  await signIn(admin, siteAdmin);
  await admin.locator(".user-menu summary").click();
  await admin.getByRole("link", { name: "Site administration" }).click();
  const row = admin.getByTestId("site-account").filter({ hasText: who.account });
  await expect(row).toContainText(who.email);
  await expect(row.locator('.quota-bar[data-resource="cpu"]').getByTestId("quota-text")).toHaveText("0 · no limit");
  await row.getByRole("link", { name: "Set quota" }).click();
  await expect(admin.getByTestId("quota-account")).toHaveText(who.account);
  await context.close();
});
