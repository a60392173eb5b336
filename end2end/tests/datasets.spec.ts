import { mkdtempSync, writeFileSync, mkdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test, expect, expectLive, newAccount, press, signUp, waitHydrated, Page } from "./fixtures";

/** Creates a dataset through the list page's dialog; lands on its page. */
async function createDataset(page: Page, open: (p: string) => Promise<void>, account: string, name: string) {
  await open("/datasets");
  await page.getByRole("link", { name: "New dataset" }).click();
  await page.getByLabel("Name").fill(name);
  await page.getByLabel("Description").fill("Handwritten digits");
  await page.getByLabel("Tags").fill("images, mnist");
  await page.getByRole("button", { name: "Create" }).click();
  await expect(page).toHaveURL(new RegExp(`/datasets/${account}/${name}$`));
  await expect(page.getByTestId("no-files")).toBeVisible();
}

async function downloaded(page: Page, click: () => Promise<void>) {
  const [download] = await Promise.all([page.waitForEvent("download"), click()]);
  const body = Buffer.concat(await (await download.createReadStream()).toArray());
  return { name: download.suggestedFilename(), body };
}

test("a dataset is uploaded with visible progress, browsed, previewed and downloaded", async ({ page, open, hydrated }) => {
  const who = newAccount("ds");
  await signUp(page, open, who);
  await createDataset(page, open, who.account, "mnist");

  // A folder (nested files) and a file big enough to watch go up.
  const dir = mkdtempSync(join(tmpdir(), "pc-upload-"));
  mkdirSync(join(dir, "train", "images"), { recursive: true });
  writeFileSync(join(dir, "train", "labels.csv"), "id,label\n1,seven\n2,\"two, maybe\"\n");
  writeFileSync(join(dir, "train", "images", "notes.txt"), "scanned at 300 dpi\n");
  const big = join(dir, "weights.bin");
  writeFileSync(big, Buffer.alloc(24 * 1024 * 1024, 7));

  await page.getByTestId("pick-folder").setInputFiles(join(dir, "train"));
  await page.getByTestId("pick-files").setInputFiles(big);
  if (hydrated) {
    // Slow the upload so the bars are seen moving (CDP throttles XHR uploads).
    const cdp = await page.context().newCDPSession(page);
    await cdp.send("Network.emulateNetworkConditions", {
      offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: 8 * 1024 * 1024,
    });
    await page.getByRole("button", { name: "Upload", exact: true }).click();
    const summary = page.getByTestId("upload-summary");
    await expect(summary).toContainText("of 3 files uploaded");
    // Midway: some bytes of the big file are sent, not all.
    const bar = page.locator('.upload-item[data-path="weights.bin"] progress');
    await expect.poll(async () => Number(await bar.getAttribute("value")), { timeout: 15_000 }).toBeGreaterThan(0);
    expect(Number(await bar.getAttribute("value"))).toBeLessThan(24 * 1024 * 1024);
    await expect(summary).toContainText("3 of 3 files uploaded", { timeout: 30_000 });
    await cdp.send("Network.emulateNetworkConditions", {
      offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1,
    });
    // The listing refreshes by itself.
    await expect(page.locator('tr[data-path="weights.bin"]')).toBeVisible();
  } else {
    await page.getByRole("button", { name: "Upload", exact: true }).click();
    await expect(page.getByText("Uploaded 3 files.")).toBeVisible();
  }
  await expect(page.getByTestId("file-count")).toHaveText("3");

  // Browse into the folder; the preview of a CSV is a table.
  await page.locator('tr[data-path="train"]').getByRole("link").click();
  await expect(page).toHaveURL(/dir=train/);
  await expect(page.locator(".breadcrumbs")).toContainText("All files / train");
  await page.locator('tr[data-path="train/labels.csv"]').getByRole("link", { name: "labels.csv" }).click();
  await expect(page).toHaveURL(/file=train%2Flabels\.csv/);
  const preview = page.getByTestId("preview");
  await expect(preview.locator("th")).toHaveText(["id", "label"]);
  await expect(preview.locator("td").last()).toHaveText("two, maybe");

  // The state is in the URL: a reload shows the same folder and preview.
  await page.reload();
  if (hydrated) await waitHydrated(page);
  await expect(page.getByTestId("preview").locator("th")).toHaveText(["id", "label"]);

  // Download one file, then the whole dataset as a zip.
  const file = await downloaded(page, () =>
    page.locator('tr[data-path="train/labels.csv"]').getByRole("link", { name: "Download" }).click(),
  );
  expect(file.name).toBe("labels.csv");
  expect(file.body.toString()).toBe(readFileSync(join(dir, "train", "labels.csv"), "utf8"));
  const zip = await downloaded(page, () => page.getByTestId("download-zip").click());
  expect(zip.name).toBe("mnist.zip");
  expect(zip.body.subarray(0, 2).toString()).toBe("PK");
  // The zip's central directory names every file.
  for (const path of ["train/labels.csv", "train/images/notes.txt", "weights.bin"]) {
    expect(zip.body.includes(Buffer.from(path))).toBe(true);
  }
});

test("a share link opens the dataset for another account until the owner revokes it", async ({ page, open, hydrated, browser, javaScriptEnabled }) => {
  const owner = newAccount("own");
  await signUp(page, open, owner);
  await createDataset(page, open, owner.account, "faces");
  const put = await page.request.put(`/api/v1/datasets/${owner.account}/faces/files/readme.txt`, {
    data: "faces, version one",
  });
  expect(put.status(), await put.text()).toBe(201);
  await page.reload();
  if (hydrated) await waitHydrated(page);
  await page.getByTestId("settings-link").click();
  await expect(page).toHaveURL(new RegExp(`/datasets/${owner.account}/faces/settings$`));

  const panel = page.getByTestId("share-panel");
  await panel.getByLabel("Link expires").selectOption("7");
  await panel.getByRole("button", { name: "Create link" }).click();
  const link = page.getByTestId("new-link").locator("a.share-link");
  await expect(link).toHaveText(/^\/shared\/pcs_/);
  const path = (await link.getAttribute("href"))!;
  await expect(panel.locator("table.shares")).toContainText("link pcs_");

  // Another account, in its own browser context.
  const other = await browser.newContext({ javaScriptEnabled });
  const otherPage = await other.newPage();
  const otherOpen = async (p: string) => {
    await otherPage.goto(p);
    if (hydrated) await waitHydrated(otherPage);
  };
  const stranger = newAccount("other");
  await signUp(otherPage, otherOpen, stranger);
  // Not shared with the account: it does not even exist for it.
  await otherOpen(`/datasets/${owner.account}/faces`);
  await expect(otherPage.getByRole("heading", { name: "Not available" })).toBeVisible();
  // Through the link: readable, downloadable, read-only.
  await otherOpen(path);
  await expect(otherPage.getByTestId("access")).toHaveText("opened by link");
  await expect(otherPage.getByTestId("uploader")).toHaveCount(0);
  const file = await downloaded(otherPage, () =>
    otherPage.locator('tr[data-path="readme.txt"]').getByRole("link", { name: "Download" }).click(),
  );
  expect(file.body.toString()).toBe("faces, version one");

  // Revoked: the link opens nothing.
  await panel.getByRole("button", { name: /Revoke link/ }).click();
  await expect(panel.locator("table.shares")).toHaveCount(0);
  await otherOpen(path);
  await expect(otherPage.getByRole("heading", { name: "Not available" })).toBeVisible();
  const gone = await otherPage.request.get(`/api/v1/shared/${path.split("/").pop()}/files/readme.txt`);
  expect(gone.status()).toBe(404);
  await other.close();
});

test("a model version is started, uploaded, finished and tagged from its page", async ({ page, open }) => {
  const who = newAccount("mdl");
  await signUp(page, open, who);
  await open("/models");
  await page.getByRole("link", { name: "New model" }).click();
  await page.getByLabel("Name").fill("resnet");
  await page.getByRole("button", { name: "Create" }).click();
  await expect(page).toHaveURL(new RegExp(`/models/${who.account}/resnet$`));

  await page.getByRole("link", { name: "New version" }).click();
  await page.getByLabel("Description").fill("first cut");
  await page.getByRole("button", { name: "Start version" }).click();
  await expect(page).toHaveURL(/version=1/);
  const row = page.locator('tr[data-version="1"]');
  await expect(row).toContainText("uploading");

  const dir = mkdtempSync(join(tmpdir(), "pc-model-"));
  writeFileSync(join(dir, "inference.pdmodel"), "model bytes");
  await page.getByTestId("pick-files").setInputFiles(join(dir, "inference.pdmodel"));
  await page.getByRole("button", { name: "Upload", exact: true }).click();
  await expect(page.locator('tr[data-path="inference.pdmodel"]')).toBeVisible();

  await row.getByRole("button", { name: "Finish upload" }).click();
  await expect(row).toContainText("ready");
  await expect(page.getByTestId("uploader")).toHaveCount(0);
  await row.getByLabel("Tags of v1").fill("production");
  await row.getByRole("button", { name: "Save" }).click();
  await expect(row.getByLabel("Tags of v1")).toHaveValue("production");
  await page.reload();
  await expect(page.locator('tr[data-version="1"]').getByLabel("Tags of v1")).toHaveValue("production");
});

test("a dataset's files are saved as a version that keeps them while the working files change", async ({ page, open, hydrated }) => {
  const who = newAccount("dsv");
  await signUp(page, open, who);
  await createDataset(page, open, who.account, "points");
  const dir = mkdtempSync(join(tmpdir(), "pc-dsv-"));
  writeFileSync(join(dir, "labels.csv"), "id,label\n1,cat\n");
  await page.getByTestId("pick-files").setInputFiles(join(dir, "labels.csv"));
  await page.getByRole("button", { name: "Upload", exact: true }).click();
  await expect(page.locator('tr[data-path="labels.csv"]')).toBeVisible();

  await page.getByRole("link", { name: "Save as version" }).click();
  await page.getByLabel("Description").fill("first labels");
  await page.getByRole("button", { name: "Save version" }).click();
  await expect(page).toHaveURL(/version=1/);
  const row = page.locator('tr[data-version="1"]');
  await expect(row).toContainText("ready");
  await expect(row).toContainText("first labels");
  // A saved version takes no uploads.
  await expect(page.getByTestId("uploader")).toHaveCount(0);

  // Back on the working files, the label is fixed and uploaded again.
  await page.getByTestId("working-files").click();
  await expect(page).not.toHaveURL(/version=/);
  writeFileSync(join(dir, "labels.csv"), "id,label\n1,dog\n");
  await page.getByTestId("pick-files").setInputFiles(join(dir, "labels.csv"));
  // Hydrated, the file goes up on its own PUT; without JavaScript, the form's POST.
  const sent = page.waitForResponse((r) =>
    hydrated ? r.request().method() === "PUT" && r.url().includes("/files/labels.csv")
             : r.request().method() === "POST" && r.url().includes("/upload/"));
  await page.getByRole("button", { name: "Upload", exact: true }).click();
  expect((await sent).status()).toBeLessThan(400);
  await page.waitForLoadState();
  await open(`/datasets/${who.account}/points?file=labels.csv`);
  await expect(page.getByTestId("preview").locator("td").last()).toHaveText("dog");

  // Version 1 still holds what it held.
  await page.locator('tr[data-version="1"]').getByRole("link", { name: "v1" }).click();
  await expect(page).toHaveURL(/version=1/);
  await page.locator('tr[data-path="labels.csv"]').getByRole("link", { name: "labels.csv" }).click();
  await expect(page.getByTestId("preview").locator("td").last()).toHaveText("cat");
  await expect(page.getByRole("link", { name: "Download v1 (zip)" })).toBeVisible();
});

test("a model's alias is set, moved and deleted from its page, with its history", async ({ page, open, hydrated }) => {
  const who = newAccount("alias");
  await signUp(page, open, who);
  // A model with two ready versions, made through the API.
  const base = `/api/v1/models/${who.account}/line`;
  expect((await page.request.post("/api/v1/models", { data: { name: "line" } })).status()).toBe(201);
  for (const v of [1, 2]) {
    expect((await page.request.post(`${base}/versions`, { data: { description: `v${v}` } })).status()).toBe(201);
    expect((await page.request.put(`${base}/files/w.bin?version=${v}`, { data: "weights" })).ok()).toBe(true);
    expect((await page.request.post(`${base}/versions/${v}/finish`)).ok()).toBe(true);
  }
  await open(`/models/${who.account}/line`);
  const aliases = page.getByTestId("aliases");
  await expect(aliases).toContainText("No aliases yet.");

  const setAlias = async (alias: string, version: string) => {
    await aliases.getByLabel("Alias", { exact: true }).fill(alias);
    await aliases.getByLabel("Version").selectOption(version);
    await press(page, hydrated, aliases.getByTestId("set-alias"));
  };
  await setAlias("production", "1");
  await expectLive(page, hydrated, aliases.locator('tr[data-alias="production"]').getByTestId("alias-version"), "v1");
  await setAlias("production", "2");
  await expectLive(page, hydrated, aliases.locator('tr[data-alias="production"]').getByTestId("alias-version"), "v2");
  if (!hydrated) await page.reload();
  await aliases.getByTestId("alias-history").locator("summary").click();
  await expect(aliases.getByTestId("alias-history")).toContainText("moved from v1 to v2");

  // A bad alias is refused, saying why.
  await aliases.getByLabel("Alias", { exact: true }).fill("Not An Alias");
  await press(page, hydrated, aliases.getByTestId("set-alias"));
  await expect(aliases).toContainText("is not an alias");

  await press(page, hydrated, aliases.getByRole("button", { name: "Delete @production" }));
  await expectLive(page, hydrated, aliases.locator("p.muted").first(), "No aliases yet.");
});
