import { test, expect, newAccount, press, runningNotebook, signUp, waitHydrated, Page } from "./fixtures";

function sweep(lr: string) {
  return {
    cells: [
      { cell_type: "markdown", id: "m1", metadata: {}, source: "# Learning rate sweep" },
      { cell_type: "code", id: "c1", metadata: {}, execution_count: null, outputs: [], source: `lr = ${lr}\nprint(lr)` },
    ],
    metadata: { kernelspec: { name: "python3", display_name: "Python 3 (ipykernel)", language: "python" } },
    nbformat: 4,
    nbformat_minor: 5,
  };
}

/** Saves `file` of the notebook as JupyterLab's save does, through the console's proxy. */
async function save(page: Page, account: string, name: string, file: string, content: object) {
  const saved = await page.request.put(`/notebooks/${account}/${name}/api/contents/${file}`, {
    data: { type: "notebook", format: "json", content },
  });
  expect(saved.status()).toBeLessThan(300);
}

/**
 * Edits the first cell of `file` in the real JupyterLab at `lab` to read
 * `code`, and saves it with Ctrl+S (a save and a checkpoint).
 */
async function editInLab(page: Page, lab: string, file: string, code: string) {
  const tab = await page.context().newPage();
  await tab.goto(`${lab}/tree/${file}`);
  const editor = tab.locator(".jp-Notebook .jp-Cell .cm-content").nth(1);
  await expect(editor).toBeVisible({ timeout: 60_000 });
  await editor.click();
  await tab.keyboard.press("ControlOrMeta+a");
  await tab.keyboard.insertText(code);
  await tab.keyboard.press("ControlOrMeta+s");
  // Saved, and checkpointed: the console has kept it as a checkpoint.
  await expect
    .poll(
      async () => {
        const history = await (await page.request.get(`/api/v1/notebooks/lab/history?path=${file}`)).json();
        return `${history.versions.length} ${history.versions[0]?.reason}`;
      },
      { timeout: 30_000 },
    )
    .toBe("2 checkpoint");
  await tab.close();
}

test("a notebook file's saves are versions to view, compare and restore from its history page", async ({ page, open, hydrated }) => {
  test.setTimeout(240_000);
  const who = newAccount("nbh");
  await signUp(page, open, who);
  await runningNotebook(page, "lab");
  await open("/notebooks");
  await expect(page.locator('tr[data-notebook="lab"]').getByTestId("history")).toBeVisible();
  await open("/notebooks/lab/history");
  await expect(page.getByTestId("no-versions")).toContainText("No version yet");

  await save(page, who.account, "lab", "sweep.ipynb", sweep("0.1"));
  if (hydrated) {
    // Ctrl+S in the real JupyterLab, through the console: a checkpoint.
    await editInLab(page, `/notebooks/${who.account}/lab/lab`, "sweep.ipynb", "lr = 0.01\nprint(lr)");
  } else {
    await save(page, who.account, "lab", "sweep.ipynb", sweep("0.01"));
  }

  await open("/notebooks");
  await page.locator('tr[data-notebook="lab"]').getByTestId("history").click();
  await expect(page).toHaveURL(/\/notebooks\/lab\/history$/);
  await expect(page.getByTestId("versioned-files")).toContainText("sweep.ipynb");
  const rows = page.getByTestId("versions").locator("tbody tr");
  await expect(rows).toHaveCount(2);
  await expect(rows.nth(0).getByTestId("reason")).toHaveText(hydrated ? "Checkpoint" : "Saved");
  await expect(rows.nth(1).getByTestId("reason")).toHaveText("Saved");
  await expect(rows.nth(0)).toContainText(who.email);
  const older = await rows.nth(1).getAttribute("data-version");

  // The newer one's changes: the edited line, cell by cell.
  await rows.nth(0).getByTestId("compare-previous").click();
  await expect(page).toHaveURL(/\/notebooks\/lab\/diff\?from=\d+&to=\d+/);
  await expect(page.getByTestId("diff-summary")).toHaveText("1 changed, 0 added, 0 removed, 1 the same");
  const changed = page.locator('.cell-diff[data-change="changed"]');
  await expect(changed.locator(".line.removed")).toHaveText("- lr = 0.1\n");
  await expect(changed.locator(".line.added")).toHaveText("+ lr = 0.01\n");

  // The older one as nbconvert renders it, in a frame where nothing runs
  // (so the test cannot look inside it either: it reads what the frame got).
  const framed = page.waitForResponse((r) => r.url().endsWith(`/api/v1/notebooks/lab/versions/${older}/html`), {
    timeout: 60_000,
  });
  await open(`/notebooks/lab/history?path=sweep.ipynb&version=${older}`);
  const shown = page.getByTestId("version-shown");
  await expect(shown).toContainText(`sweep.ipynb · #${older} · Saved`);
  await expect(page.getByTestId("version-page")).toHaveAttribute("sandbox", "");
  const rendered = await framed;
  expect(rendered.status()).toBe(200);
  expect(rendered.headers()["content-security-policy"]).toMatch(/^sandbox/);
  const html = await rendered.text();
  expect(html).toMatch(/<h1[^>]*>Learning rate sweep/);
  expect(html).not.toContain("<script");

  // Restored: the file is the older version again, and the history says so.
  await shown.getByText("Restore…").click();
  await press(page, hydrated, shown.getByTestId("restore"));
  await expect(page.getByTestId("restored")).toContainText(`Version #${older} is in the workspace again`);
  await expect(rows).toHaveCount(3);
  await expect(rows.nth(0).getByTestId("reason")).toHaveText(`Restored (#${older})`);
  const file = await (await page.request.get(`/notebooks/${who.account}/lab/api/contents/sweep.ipynb?content=1`)).json();
  expect(file.content.cells[1].source).toBe("lr = 0.1\nprint(lr)");
  if (hydrated) await waitHydrated(page);
});

test("the history of a notebook that does not exist is a clear error, not a page", async ({ page, open }) => {
  const who = newAccount("nbh2");
  await signUp(page, open, who);
  await open("/notebooks/nobody/history");
  await expect(page.getByRole("alert")).toContainText("Notebook “nobody” not found.");
  await open("/notebooks/nobody/diff?from=1&to=2");
  await expect(page.getByRole("alert")).toContainText("Notebook “nobody” not found.");
});
