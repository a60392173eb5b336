import { test, expect, newAccount, press, signUp } from "./fixtures";

/** A value no other test or page prints. */
function uniqueValue() {
  return `s3cr3t-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 10)}`;
}

test("an owner sets a secret on the page, a job from the dialog uses it, its value is shown nowhere, and it is deleted", async ({
  page,
  open,
  hydrated,
}) => {
  test.setTimeout(120_000);
  const who = newAccount("sec");
  await signUp(page, open, who);
  const value = uniqueValue();

  // From the user menu (a <details>, so it opens without JavaScript too).
  await page.locator(".user-menu summary").click();
  await press(page, hydrated, page.locator(".user-menu").getByRole("link", { name: "Secrets", exact: true }));
  await expect(page).toHaveURL(/\/secrets$/);
  await expect(page.getByTestId("no-secrets")).toHaveText("No secret yet.");
  await expect(page.getByTestId("owners-only")).toHaveCount(0);

  // A name the field's pattern lets through but the server refuses (too
  // long) is refused next to the field, and the value is not sent back.
  let form = page.getByTestId("set-secret-form");
  await form.getByLabel("Name", { exact: true }).fill("a".repeat(65));
  await form.getByLabel("Value", { exact: true }).fill(value);
  await press(page, hydrated, page.getByTestId("save-secret"));
  await expect(page.locator("#name-error")).toContainText("is not a secret name");
  expect(await page.content()).not.toContain(value);
  expect(page.url()).not.toContain(value);
  await expect(page.getByTestId("no-secrets")).toBeVisible();

  await open("/secrets");
  form = page.getByTestId("set-secret-form");
  await form.getByLabel("Name", { exact: true }).fill("s3-key");
  await form.getByLabel("Value", { exact: true }).fill(value);
  await form.getByLabel("What it is for", { exact: true }).fill("Read access to the bucket");
  await press(page, hydrated, page.getByTestId("save-secret"));
  await expect(page).toHaveURL(/\/secrets\?set=s3-key$/);
  await expect(page.getByTestId("secret-set")).toHaveText("Secret “s3-key” set. Its value is not shown again.");
  const row = page.locator('[data-testid="secrets"] tr[data-secret="s3-key"]');
  await expect(row).toContainText("Read access to the bucket");
  await expect(row).toContainText(`${value.length} B`);
  await expect(row).toContainText(who.email);
  await expect(row.getByTestId("secret-last-used")).toHaveText("never");
  await expect(page.getByTestId("set-secret-form").getByLabel("Value", { exact: true })).toHaveValue("");
  expect(await page.content()).not.toContain(value);
  const served = await page.request.get("/secrets");
  expect(served.status()).toBe(200);
  expect(await served.text()).not.toContain(value);
  const listed = await page.request.get("/api/v1/secrets");
  expect(await listed.json()).toEqual([
    expect.objectContaining({ name: "s3-key", description: "Read access to the bucket", size: value.length }),
  ]);
  expect(await listed.text()).not.toContain(value);

  // A job submitted from the dialog names it; its page shows where it goes.
  await open("/jobs");
  await page.getByRole("link", { name: "Submit job" }).click();
  const dialog = page.getByRole("dialog", { name: "Submit a training job" });
  await expect(dialog).toBeVisible();
  await dialog.getByLabel("Name", { exact: true }).fill("uses-key");
  await dialog
    .getByLabel("Command", { exact: true })
    .fill(`python3 -c 'import os; v = os.environ["S3_KEY"]; print("key", v); print("reversed", v[::-1])'`);
  await dialog.getByLabel("Count", { exact: true }).first().fill("0");
  await dialog.getByLabel("Count", { exact: true }).nth(1).fill("1");
  await dialog.getByLabel(/^Secrets \(one per line/).fill("S3_KEY=s3-key");
  await dialog.getByRole("button", { name: "Submit", exact: true }).click();
  await expect(dialog).toBeHidden();
  await expect
    .poll(async () => (await (await page.request.get("/api/v1/jobs/uses-key")).json()).status, { timeout: 60_000 })
    .toBe("succeeded");
  const log = await (await page.request.get("/api/v1/jobs/uses-key/pods/trainer-0/log")).text();
  expect(log).toContain("key ***");
  expect(log).toContain(`reversed ${[...value].reverse().join("")}`);
  expect(log).not.toContain(value);

  await open("/jobs/uses-key");
  await expect(page.getByTestId("job-secrets")).toHaveText("s3-key → S3_KEY");
  expect(await page.content()).not.toContain(value);

  // Used: the list says when; the owner deletes it.
  await open("/secrets");
  await expect(row.getByTestId("secret-last-used")).not.toHaveText("never");
  await expect(row.getByTestId("secret-last-used")).toContainText("UTC");
  await press(page, hydrated, row.getByTestId("delete-secret"));
  await expect(page.getByTestId("no-secrets")).toHaveText("No secret yet.");
  expect((await page.request.get("/api/v1/secrets")).ok()).toBeTruthy();
  expect(await (await page.request.get("/api/v1/secrets")).json()).toEqual([]);
});
