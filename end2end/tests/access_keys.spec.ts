import * as fs from "node:fs/promises";
import { test, expect, newAccount, signUp } from "./fixtures";

test("a user creates an access key, gets credentials.json that works, and revokes it", async ({
  page,
  open,
  hydrated,
  request,
  baseURL,
}) => {
  const who = newAccount("keys");
  await signUp(page, open, who);
  await open("/account");
  await expect(page.getByText("No access keys yet.")).toBeVisible();

  await page.getByLabel("Key name").fill("laptop");
  // Read only, for 30 days.
  await page.getByLabel("May", { exact: true }).selectOption("read");
  await page.getByLabel("Expires", { exact: true }).selectOption("30");
  let credentialsText: string;
  if (hydrated) {
    // Shown once in the page, with a download link.
    await page.getByRole("button", { name: "Create key" }).click();
    const shown = page.getByTestId("new-key");
    await expect(shown).toContainText("not shown again");
    const key = (await shown.locator("code.secret").innerText()).trim();
    expect(key).toMatch(/^pck_[0-9a-f]{64}$/);
    const download = page.waitForEvent("download");
    await shown.getByRole("link", { name: "Download credentials.json" }).click();
    const file = await download;
    expect(file.suggestedFilename()).toBe("credentials.json");
    credentialsText = await fs.readFile(await file.path(), "utf8");
    expect(JSON.parse(credentialsText).key).toBe(key);
  } else {
    // Without JavaScript the form posts and the answer is the file itself.
    const download = page.waitForEvent("download");
    await page.getByRole("button", { name: "Create key" }).click();
    const file = await download;
    expect(file.suggestedFilename()).toBe("credentials.json");
    credentialsText = await fs.readFile(await file.path(), "utf8");
    await open("/account");
  }
  const credentials = JSON.parse(credentialsText);
  expect(credentials.server).toBe(baseURL);
  expect(credentials.account).toBe(who.account);
  expect(credentials.user).toBe(who.email);

  // The key works against the REST API, as the CLI and SDK use it.
  const me = await request.get("/api/v1/me", {
    headers: { Authorization: `Bearer ${credentials.key}` },
  });
  expect(me.status()).toBe(200);
  expect((await me.json()).account.name).toBe(who.account);
  // Read only: a submit is refused, saying so.
  const submit = await request.post("/api/v1/jobs", {
    headers: { Authorization: `Bearer ${credentials.key}` },
    data: { name: "x", command: ["true"], num_trainers: 1 },
  });
  expect(submit.status()).toBe(403);
  expect((await submit.json()).error.message).toContain("scope is “read” (read only)");

  // Listed by name and prefix; after the API call, with a "last used" time.
  await open("/account");
  const row = page.getByTestId("access-keys").getByRole("row", { name: /laptop/ });
  await expect(row).toContainText(credentials.key.slice(0, 12));
  await expect(row.getByTestId("key-last-used")).not.toHaveText("never");
  await expect(row.getByTestId("key-scope")).toHaveText("read only");
  await expect(row.getByTestId("key-expires")).toContainText("UTC");
  await expect(page.locator("body")).not.toContainText(credentials.key);

  await row.getByRole("button", { name: "Revoke" }).click();
  await expect(page.getByText("No access keys yet.")).toBeVisible();
  const refused = await request.get("/api/v1/me", {
    headers: { Authorization: `Bearer ${credentials.key}` },
  });
  expect(refused.status()).toBe(401);
});

test("a key without a name is refused next to the field", async ({ page, open }) => {
  const who = newAccount("keys");
  await signUp(page, open, who);
  await open("/account");
  await page.getByLabel("Key name").fill("   ");
  await page.getByRole("button", { name: "Create key" }).click();
  await expect(page.locator("#name-error")).toContainText("Give the key a name");
  await expect(page.getByText("No access keys yet.")).toBeVisible();
});
