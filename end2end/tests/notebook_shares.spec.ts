import { test, expect, newAccount, press, runningNotebook, signUp, waitHydrated } from "./fixtures";

const sweep = {
  cells: [
    { cell_type: "markdown", id: "m1", metadata: {}, source: "# Shared sweep" },
    { cell_type: "code", id: "c1", metadata: {}, execution_count: null, outputs: [], source: "lr = 0.1" },
  ],
  metadata: {},
  nbformat: 4,
  nbformat_minor: 5,
};

test("a notebook file is shared by link and with another account, read rendered and copied into their notebook", async ({
  page,
  open,
  hydrated,
  browser,
}) => {
  test.setTimeout(240_000);
  const owner = newAccount("nbs");
  await signUp(page, open, owner);
  await runningNotebook(page, "lab");
  const saved = await page.request.put(`/notebooks/${owner.account}/lab/api/contents/sweep.ipynb`, {
    data: { type: "notebook", format: "json", content: sweep },
  });
  expect(saved.status()).toBeLessThan(300);

  // Another account, in a browser of its own.
  const other = newAccount("nbr");
  const theirs = await browser.newContext({ javaScriptEnabled: hydrated });
  const them = await theirs.newPage();
  const openThem = async (path: string) => {
    await them.goto(path);
    if (hydrated) await waitHydrated(them);
  };
  await signUp(them, openThem, other);

  // A link, shown once.
  await open("/notebooks/lab/history?path=sweep.ipynb");
  const panel = page.getByTestId("file-share-panel");
  await expect(panel.getByTestId("no-shares")).toHaveText("Not shared.");
  await panel.getByLabel("With").selectOption("link");
  await press(page, hydrated, panel.getByTestId("share"));
  const link = await panel.getByTestId("new-link").locator("a").getAttribute("href");
  expect(link).toMatch(/^\/shared\/notebooks\/pcf_[0-9a-f]{64}$/);
  await expect(panel.getByTestId("file-shares")).toContainText("link pcf_");

  // Opened signed out: the file rendered, nothing to copy into.
  const stranger = await browser.newContext({ javaScriptEnabled: hydrated });
  const anyone = await stranger.newPage();
  const framed = anyone.waitForResponse((r) => r.url().includes("/api/v1/shared/notebooks/") && r.url().endsWith("/html"));
  await anyone.goto(link!);
  await expect(anyone.getByTestId("shared-file")).toContainText(`sweep.ipynb from ${owner.account}/lab`);
  await expect(anyone.getByText("Sign in to copy it into a notebook of yours.")).toBeVisible();
  const page1 = await framed;
  expect(page1.status()).toBe(200);
  expect(await page1.text()).toMatch(/<h1[^>]*>Shared sweep/);
  await stranger.close();

  // With the other account, named in the form.
  await panel.getByLabel("With").selectOption("account");
  await panel.getByLabel("Account").fill(other.account);
  await press(page, hydrated, panel.getByTestId("share"));
  await expect(panel.getByTestId("file-shares")).toContainText(`account ${other.account}`);

  // They read it from "Shared with you", then copy it into a notebook of theirs.
  await openThem("/notebooks/shared");
  const row = them.getByTestId("shared-files").locator("tbody tr");
  await expect(row).toHaveCount(1);
  await expect(row).toContainText(`${owner.account}/lab`);
  await row.getByTestId("read").click();
  await expect(them.getByTestId("shared-file")).toContainText(`Shared by ${owner.email}`);
  await expect(them.getByTestId("no-running")).toBeVisible();
  await runningNotebook(them, "mine");
  await openThem(them.url());
  await press(them, hydrated, them.getByTestId("copy"));
  await expect(them.getByTestId("copied")).toContainText("Copied into mine/sweep.ipynb.");
  const copy = await (await them.request.get(`/notebooks/${other.account}/mine/api/contents/sweep.ipynb?content=1`)).json();
  expect(copy.content.cells[1].source).toBe("lr = 0.1");
  await theirs.close();

  // The link revoked: it opens nothing.
  await open("/notebooks/lab/history?path=sweep.ipynb");
  await press(page, hydrated, panel.getByRole("button", { name: /^Revoke link pcf_/ }));
  await expect(panel.getByTestId("file-shares")).not.toContainText("link pcf_");
  const revoked = await page.request.get(`/api/v1${link}`);
  expect(revoked.status()).toBe(404);
});
