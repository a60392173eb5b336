import { test, expect, expectLive, newAccount, press, signUp } from "./fixtures";

const sh = (script: string) => ({
  command: ["sh", "-c", script], num_trainers: 1, trainer: { cpu: "100m", memory: "64Mi" },
});

test("a run's graph and node table show what failed, filter by status, open a node's log, and retry from failed", async ({
  page,
  open,
  hydrated,
}) => {
  test.setTimeout(120_000);
  await signUp(page, open, newAccount("flows"));
  const made = await page.request.post("/api/v1/pipelines", {
    data: { name: "nightly", pipeline: { name: "nightly", fail_fast: false, nodes: [
      { name: "prep", job: sh("echo prepared") },
      { name: "bad", job: sh("echo broken; exit 2"), after: ["prep"] },
      { name: "good", job: sh("sleep 1"), after: ["prep"] },
      { name: "join", job: sh("true"), after: ["bad", "good"] },
    ] } },
  });
  expect(made.status(), await made.text()).toBe(201);

  await open("/pipelines");
  await expect(page.locator('tr[data-run="nightly"]')).toBeVisible();
  await page.getByRole("link", { name: "nightly", exact: true }).click();
  await expect(page).toHaveURL(/\/pipelines\/nightly$/);
  await expectLive(page, hydrated, page.getByTestId("run-status"), "failed", 60_000);
  await expect(page.getByTestId("graph-node")).toHaveCount(4);
  await expect(page.locator('tr[data-node="bad"] [data-testid="node-status"]')).toHaveText("failed");
  await expect(page.locator('tr[data-node="join"]')).toContainText("It waited for “bad” to succeed, which failed.");

  // The filter is the URL: only the failed node is listed.
  await page.getByTestId("filter-failed").click();
  await expect(page).toHaveURL(/status=failed/);
  await expect(page.locator("tr[data-node]")).toHaveCount(1);
  await expect(page.locator('tr[data-node="bad"]')).toContainText("exited with code 2");

  // Retry from failed: prep and good are kept, bad and join run again.
  await press(page, hydrated, page.getByTestId("retry-run"));
  await open("/pipelines/nightly");
  await expectLive(page, hydrated, page.getByTestId("run-status"), "failed", 60_000);
  await expect(page.locator('tr[data-node="bad"]')).toContainText("nightly-bad-r2");
  await expect(page.locator('tr[data-node="prep"]')).toContainText("nightly-prep");
  await expect(page.locator('tr[data-node="prep"]')).not.toContainText("-r2");

  // A node's box docks its job under the run: node, try, charts and log.
  await page.locator('[data-testid="graph-node"][data-label="prep"]').click();
  await expect(page).toHaveURL(/\/pipelines\/nightly\?log=nightly-prep/);
  await expect(page.getByTestId("dock-node")).toHaveText("Node prep · try 1");
  await expect(page.getByTestId("dock-status")).toHaveText("succeeded");
  await expect(page.getByTestId("metrics-source")).toBeVisible();
  await expect(page.getByTestId("log")).toContainText("prepared");
  await expect(page.getByTestId("graph")).toBeVisible();
  // Its job in the table docks the retried node the same way.
  await page.locator('tr[data-node="bad"]').getByTestId("node-log").click();
  await expect(page).toHaveURL(/log=nightly-bad-r2/);
  await expect(page.getByTestId("dock-node")).toHaveText("Node bad · try 2");
  await expect(page.getByTestId("log")).toContainText("broken");
});

test("New pipeline previews the graph from templates, keeps what was typed, and runs it", async ({
  page,
  open,
  hydrated,
}) => {
  test.setTimeout(120_000);
  const who = newAccount("former");
  await signUp(page, open, who);
  const say = `${who.account}/say`;
  const saved = await page.request.post("/api/v1/templates", {
    data: { name: "say", parameters: [{ name: "word", type: "string", default: "hi" }], job: sh("echo {{word}}") },
  });
  expect(saved.status(), await saved.text()).toBe(201);

  await open("/pipelines");
  await page.getByRole("link", { name: "New pipeline" }).click();
  await expect(page).toHaveURL(/new=1/);
  await page.getByLabel("Pipeline name").fill("greet");
  await page.getByLabel("Run name (optional)").fill("greet-1");
  const row = (i: number) => page.getByTestId("node-row").nth(i);
  await row(0).getByLabel("Name", { exact: true }).fill("hello");
  await row(0).getByLabel("Template").selectOption(say);
  await row(0).getByLabel("Values (NAME=VALUE per line)").fill("word=hello");
  await row(1).getByLabel("Name", { exact: true }).fill("bye");
  await row(1).getByLabel("Template").selectOption(say);
  await row(1).getByLabel("Values (NAME=VALUE per line)").fill("word=bye");
  await row(1).getByLabel("Waits for").fill("hello");

  // The preview draws the two nodes in order and keeps the form.
  await page.getByTestId("preview").click();
  await expect(page).toHaveURL(/preview=1/);
  await expect(page.getByTestId("preview-graph").getByTestId("graph-node")).toHaveCount(2);
  await expect(row(1).getByLabel("Waits for")).toHaveValue("hello");
  await expect(row(0).getByLabel("Values (NAME=VALUE per line)")).toHaveValue("word=hello");

  // A cycle is named instead of drawn.
  await row(0).getByLabel("Waits for").fill("bye");
  await page.getByTestId("preview").click();
  await expect(page.getByTestId("preview-error")).toContainText("→");
  await row(0).getByLabel("Waits for").fill("");

  await press(page, hydrated, page.getByRole("button", { name: "Run the pipeline" }));
  await expect(page).toHaveURL(/\/pipelines\/greet-1$/);
  await expectLive(page, hydrated, page.getByTestId("run-status"), "succeeded", 60_000);
  await expect(page.getByTestId("graph-node")).toHaveCount(2);
});
