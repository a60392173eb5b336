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

  // A node's box opens its job's log.
  await page.locator('[data-testid="graph-node"][data-label="prep"]').click();
  await expect(page).toHaveURL(/\/jobs\?log=nightly-prep/);
  await expect(page.getByTestId("log")).toContainText("prepared");
});
