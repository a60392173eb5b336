import { test, expect, newAccount, press, signUp } from "./fixtures";

test("an alert rule made on the page fires on a job's metric, is listed, marked on its chart and deleted", async ({ page, open, hydrated }) => {
  test.setTimeout(120_000);
  const who = newAccount("alr");
  await signUp(page, open, who);
  const made = await page.request.post("/api/v1/jobs", {
    data: { name: "climb", command: ["sleep", "90"], num_trainers: 1, trainer: { cpu: "100m", memory: "64Mi" } },
  });
  expect(made.status()).toBe(201);

  await open("/paddleboard");
  await press(page, hydrated, page.getByTestId("alerts-link"));
  await expect(page).toHaveURL(/\/alerts$/);
  await expect(page.getByTestId("no-rules")).toBeVisible();
  await expect(page.getByTestId("no-alerts")).toBeVisible();

  // A threshold that is no number is refused, naming the field.
  const form = page.getByTestId("new-rule-form");
  await form.getByLabel("Name", { exact: true }).fill("high-loss");
  await form.getByLabel("Tag", { exact: true }).fill("loss");
  await form.getByLabel("Fires when the tag").selectOption("above");
  await form.getByLabel("Threshold or minutes").fill("lots");
  await press(page, hydrated, page.getByTestId("create-rule"));
  await expect(page.getByText("A threshold is a number, e.g. 2.5.")).toBeVisible();

  const again = page.getByTestId("new-rule-form");
  await again.getByLabel("Name", { exact: true }).fill("high-loss");
  await again.getByLabel("Tag", { exact: true }).fill("loss");
  await again.getByLabel("Fires when the tag").selectOption("above");
  await again.getByLabel("Threshold or minutes").fill("10");
  await press(page, hydrated, page.getByTestId("create-rule"));
  await expect(page).toHaveURL(/\/alerts$/);
  const rule = page.locator('[data-testid="alert-rules"] tr[data-rule="high-loss"]');
  await expect(rule).toContainText("loss is above 10 (every running job)");

  // The job runs; its loss climbs past the threshold.
  await expect.poll(async () => (await (await page.request.get("/api/v1/jobs/climb")).json()).status, { timeout: 30_000 }).toBe("running");
  const sent = await page.request.post("/api/v1/jobs/climb/metrics", {
    data: [{ tag: "loss", step: 1, value: 3 }, { tag: "loss", step: 2, value: 12.5 }],
  });
  expect(sent.ok()).toBeTruthy();
  const raised = page.locator('[data-testid="alerts"] tr[data-job="climb"][data-state="open"]');
  await expect(async () => {
    await page.reload();
    await expect(raised).toHaveCount(1, { timeout: 1_000 });
  }).toPass({ timeout: 30_000 });
  await expect(raised).toContainText("loss is above 10 at step 2: 12.5");
  await expect(page.locator('[data-testid="alert-rules"] tr[data-rule="high-loss"]').getByTestId("open-count")).toHaveText("1");

  // The job's page says so.
  await open("/jobs/climb");
  await expect(page.getByTestId("job-alerts")).toContainText("loss is above 10 at step 2: 12.5 (high-loss)");
  await open("/alerts");

  // Its message opens PaddleBoard on the job and tag, the alert marked.
  await press(page, hydrated, raised.getByRole("link", { name: /loss is above 10/ }));
  await expect(page).toHaveURL(/\/paddleboard\?job=climb&tags=loss/);
  await expect(page.locator("article.chart-card[data-tag='loss'] line.alert-mark.open")).toHaveCount(1);

  await open("/alerts");
  await press(page, hydrated, page.getByTestId("delete-rule"));
  await expect(page.getByTestId("no-rules")).toBeVisible();
  await expect(page.getByTestId("no-alerts")).toBeVisible();
  await page.request.post("/api/v1/jobs/climb/stop");
});
