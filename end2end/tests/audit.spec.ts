import { test, expect, newAccount, signUp } from "./fixtures";

/** A busy day on a fresh account: 200 keys made and 60 of them revoked. */
async function busyDay(request: import("@playwright/test").APIRequestContext) {
  for (let i = 0; i < 200; i++) {
    const made = await request.post("/api/create_access_key", { form: { name: `k${i}` } });
    expect(made.status(), await made.text()).toBe(200);
  }
  const listed = await request.post("/api/access_keys", { form: {} });
  const keys: { id: number }[] = await listed.json();
  expect(keys.length).toBe(200);
  for (const key of keys.slice(0, 60)) {
    const revoked = await request.post("/api/revoke_access_key", { form: { id: String(key.id) } });
    expect(revoked.status(), await revoked.text()).toBe(200);
  }
}

test("after a busy day the Account page shows the latest ten audit events and the whole log pages and filters the hundreds", async ({ page, open }) => {
  test.setTimeout(120_000);
  const who = newAccount("audit");
  await signUp(page, open, who);
  await busyDay(page.request);

  // The Account page: the ten latest (the revocations), a link to the rest.
  await open("/account");
  const latest = page.getByTestId("audit").locator("tbody tr");
  await expect(latest).toHaveCount(10);
  await expect(page.getByTestId("audit-action").first()).toHaveText("key.revoked");
  await page.getByTestId("audit-all").click();
  await expect(page).toHaveURL(/\/account\/audit$/);

  // The whole log, 50 a page, newest first; older and back.
  const rows = page.getByTestId("audit").locator("tbody tr");
  await expect(rows).toHaveCount(50);
  const firstPage = await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-event")));
  await expect(page.getByTestId("audit-newer")).toHaveCount(0);
  await page.getByTestId("audit-older").click();
  await expect(page).toHaveURL(/\/account\/audit\?before=\d+-\d+$/);
  await expect(rows).toHaveCount(50);
  const secondPage = await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-event")));
  expect(secondPage.filter((id) => firstPage.includes(id))).toEqual([]);
  expect(Number(secondPage[0])).toBeLessThan(Number(firstPage[49]));
  await page.getByTestId("audit-newer").click();
  await expect(rows).toHaveCount(50);
  expect(await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-event")))).toEqual(firstPage);

  // Filtered from the form: the revocations of today, by the owner; the
  // filters are the URL, and a reload keeps them.
  const today = new Date().toISOString().slice(0, 10);
  const filters = page.getByTestId("audit-filters");
  await filters.locator("input[name=actor]").fill(who.email.toUpperCase());
  await filters.locator("select[name=action]").selectOption("key.revoked");
  await filters.locator("input[name=from]").fill(today);
  await filters.locator("input[name=to]").fill(today);
  await filters.getByRole("button", { name: "Apply" }).click();
  await expect(page).toHaveURL(/action=key\.revoked/);
  await expect(rows).toHaveCount(50);
  await expect(page.getByTestId("audit-action").filter({ hasNotText: "key.revoked" })).toHaveCount(0);
  await page.getByTestId("audit-older").click();
  await expect(rows).toHaveCount(10);
  await expect(page.getByTestId("audit-older")).toHaveCount(0);
  await page.reload();
  await expect(rows).toHaveCount(10);
  await expect(filters.locator("select[name=action]")).toHaveValue("key.revoked");

  // A kind: every key.… action; then nothing from another actor.
  await page.goto("/account/audit?action=key");
  await expect(rows).toHaveCount(50);
  await expect(page.getByTestId("audit-action").filter({ hasNotText: /^key\./ })).toHaveCount(0);
  await page.goto("/account/audit?actor=nobody");
  await expect(page.getByTestId("no-events")).toBeVisible();
});
