import { test, expect, newAccount, press, runningNotebook, signUp, Page } from "./fixtures";

/** A notebook whose first cell is tagged `parameters`, then `cells`. */
function withParameters(parameters: string, ...cells: string[]) {
  const code = (id: string, source: string, tags: string[] = []) => ({
    cell_type: "code", id, metadata: { tags }, execution_count: null, outputs: [], source,
  });
  return {
    cells: [code("p", parameters, ["parameters"]), ...cells.map((c, i) => code(`c${i}`, c))],
    metadata: { kernelspec: { name: "python3", display_name: "Python 3 (ipykernel)", language: "python" } },
    nbformat: 4,
    nbformat_minor: 5,
  };
}

async function save(page: Page, account: string, file: string, content: object) {
  const saved = await page.request.put(`/notebooks/${account}/lab/api/contents/${file}`, {
    data: { type: "notebook", format: "json", content },
  });
  expect(saved.status()).toBeLessThan(300);
}

/** Reloads the job's page until its status reads `status` (without scripts nothing follows it live). */
async function untilStatus(page: Page, status: string) {
  await expect(async () => {
    await page.reload();
    await expect(page.getByTestId("job-status")).toHaveText(status, { timeout: 1_000 });
  }).toPass({ timeout: 600_000, intervals: [2_000] });
}

test("a notebook with a parameters cell runs as a job from its history, and the job page shows the executed notebook", async ({ page, open, hydrated }) => {
  // The first run builds its environment (papermill) from PyPI.
  test.setTimeout(900_000);
  const who = newAccount("nbr");
  await signUp(page, open, who);
  await runningNotebook(page, "lab");
  await save(page, who.account, "train.ipynb",
    withParameters("epochs = 2  # passes\nlabel = 'first'", "print('EPOCHS', epochs * 10, label)"));

  await open("/notebooks/lab/history?path=train.ipynb");
  await press(page, hydrated, page.getByTestId("run-version").first());
  await expect(page).toHaveURL(/\/notebooks\/lab\/run\?path=train\.ipynb&version=\d+$/);
  await expect(page.getByTestId("parameters-cell")).toContainText("Cell 1 is tagged “parameters”");
  await expect(page.getByLabel("epochs (passes)")).toHaveValue("2");
  await expect(page.getByLabel("label")).toHaveValue("first");

  // A bad value is refused on the form, naming the field.
  await page.getByLabel("epochs (passes)").fill("1.5");
  if (!hydrated) {
    // The browser's own check (a whole number) is what a user meets first;
    // without scripts the form is sent as typed, and the server says why.
    await page.getByLabel("epochs (passes)").evaluate((e: HTMLInputElement) => e.setAttribute("step", "any"));
    await press(page, hydrated, page.getByTestId("run-notebook"));
    await expect(page.getByText("epochs takes a whole number")).toBeVisible();
  }
  await page.getByLabel("epochs (passes)").fill("7");
  await page.getByLabel("Job name (empty: named after the file)").fill("train-7");
  await press(page, hydrated, page.getByTestId("run-notebook"));
  await expect(page).toHaveURL(/\/jobs\/train-7$/);
  const section = page.getByTestId("notebook-run");
  await expect(section).toContainText("train.ipynb");
  await expect(section.getByTestId("notebook-values")).toHaveText("epochs=7");
  await untilStatus(page, "Succeeded");
  await expect(section.getByTestId("notebook-progress")).toContainText("3 of 3 cells ran");
  const framed = page.waitForResponse((r) => r.url().includes("/api/v1/jobs/train-7/notebook/output/html"), {
    timeout: 60_000,
  });
  await page.reload();
  await expect(page.getByTestId("notebook-output")).toHaveAttribute("sandbox", "");
  const rendered = await framed;
  expect(rendered.status()).toBe(200);
  expect(rendered.headers()["content-security-policy"]).toMatch(/^sandbox/);
  expect(await rendered.text()).toContain("EPOCHS 70 first");

  // Saved as a template, the run's notebook runs again with new values.
  await press(page, hydrated, page.getByTestId("save-as-template"));
  await expect(page.getByTestId("template-notebook")).toContainText("runs the notebook this run ran");
  await expect(page.getByLabel("Parameters (JSON)")).toHaveValue(/"default": 7/);
  await page.getByLabel("Name", { exact: true }).fill("train-tmpl");
  await press(page, hydrated, page.getByRole("button", { name: "Save template" }));
  await expect(page).toHaveURL(/\/templates\/train-tmpl\?owner=/);
  await expect(page.getByTestId("template-notebook")).toContainText("train.ipynb of notebook lab");
  const view = await page.request.get((await page.getByTestId("template-notebook-view").getAttribute("href"))!);
  expect(view.status()).toBe(200);
  expect(view.headers()["content-security-policy"]).toMatch(/^sandbox/);
  expect(await view.text()).toContain("EPOCHS");
  await expect(page.getByLabel("epochs (passes)")).toHaveValue("7");
  await page.getByLabel("epochs (passes)").fill("9");
  await page.getByLabel("Job name (empty: named after the template)").fill("tmpl-9");
  await press(page, hydrated, page.getByRole("button", { name: "Run", exact: true }));
  await expect(page).toHaveURL(/\/jobs/);
  await open("/jobs/tmpl-9");
  await expect(page.getByTestId("job-origin")).toContainText("train-tmpl");
  await expect(page.getByTestId("notebook-run").getByTestId("notebook-values")).toHaveText("epochs=9, label=first");
  await untilStatus(page, "Succeeded");
  await expect(page.getByTestId("notebook-run-again")).toHaveAttribute("href", /^\/templates\/train-tmpl\?/);

  // A failing cell fails the job, and the page shows which and why.
  await save(page, who.account, "fail.ipynb", withParameters("divisor = 1", "print('BEFORE')", "print(1 / divisor)"));
  await open("/notebooks/lab/history?path=fail.ipynb");
  await press(page, hydrated, page.getByTestId("run-version").first());
  await page.getByLabel("divisor").fill("0");
  await page.getByLabel("Job name (empty: named after the file)").fill("fail-0");
  await press(page, hydrated, page.getByTestId("run-notebook"));
  await expect(page).toHaveURL(/\/jobs\/fail-0$/);
  await untilStatus(page, "Failed");
  const failed = page.getByTestId("notebook-failed-cell");
  await expect(failed).toContainText("Cell 4 · In [4] failed: ZeroDivisionError: division by zero");
  await expect(failed.locator("pre.cell-source")).toHaveText("print(1 / divisor)");
  await expect(page.getByTestId("notebook-progress")).toContainText("Failed at cell 4 of 4");

  // "Run again with other values" opens the form filled from the job.
  await press(page, hydrated, page.getByTestId("notebook-run-again"));
  await expect(page.getByTestId("from-job")).toContainText("The values of job fail-0");
  await expect(page.getByLabel("divisor")).toHaveValue("0");
});
