import { test, expect, newAccount, press, signUp } from "./fixtures";

test("a schedule made on the page runs its template on the cron, and is paused and deleted there", async ({ page, open, hydrated }) => {
  test.setTimeout(180_000);
  const who = newAccount("sch");
  await signUp(page, open, who);
  const saved = await page.request.post("/api/v1/templates", {
    data: {
      name: "tick",
      parameters: [{ name: "secs", type: "int", default: 0 }],
      job: { command: ["sleep", "{{secs}}"], num_trainers: 1, trainer: { cpu: "100m", memory: "64Mi" } },
    },
  });
  expect(saved.status()).toBe(201);

  await open("/pipelines");
  await press(page, hydrated, page.getByTestId("schedules-link"));
  await expect(page).toHaveURL(/\/schedules$/);
  await expect(page.getByTestId("no-schedules")).toBeVisible();
  const form = page.getByTestId("new-schedule-form");
  // A pattern that is none is refused on the form, naming the field.
  await form.getByLabel("Name", { exact: true }).fill("ticker");
  await form.getByLabel(/^Cron/).fill("61 * * * *");
  await form.getByLabel("Template (name or owner/name)").fill("tick");
  await press(page, hydrated, page.getByTestId("create-schedule"));
  await expect(page.getByText(/Not a cron pattern/)).toBeVisible();

  await page.getByTestId("new-schedule-form").getByLabel("Name", { exact: true }).fill("ticker");
  await page.getByTestId("new-schedule-form").getByLabel(/^Cron/).fill("*/2 * * * * *");
  await page.getByTestId("new-schedule-form").getByLabel("Timezone (IANA)").fill("Asia/Tokyo");
  await page.getByTestId("new-schedule-form").getByLabel("Template (name or owner/name)").fill("tick");
  await page.getByTestId("new-schedule-form").getByLabel("Values (name=value, one a line)").fill("secs=0");
  await press(page, hydrated, page.getByTestId("create-schedule"));
  await expect(page).toHaveURL(/\/schedules\/ticker$/);
  await expect(page.getByTestId("schedule-facts")).toContainText("template tick");
  await expect(page.getByTestId("schedule-facts")).toContainText("*/2 * * * * * (Asia/Tokyo)");
  await expect(page.getByTestId("schedule-state")).toHaveText("active");

  // Its ticks start jobs named by their time; each links to its job.
  await expect(async () => {
    await page.reload();
    await expect(page.locator('[data-testid="schedule-runs"] tr[data-outcome="started"] a').first()).toBeVisible({ timeout: 1_000 });
  }).toPass({ timeout: 60_000 });
  const job = await page.locator('[data-testid="schedule-runs"] tr[data-outcome="started"] a').first().textContent();
  expect(job).toMatch(/^ticker-\d{14}$/);

  await press(page, hydrated, page.getByTestId("pause-or-resume"));
  await expect(page.getByTestId("schedule-state")).toHaveText("paused");
  await expect(page.getByTestId("next-tick")).toHaveText("—");
  await open("/schedules");
  await expect(page.locator('tr[data-schedule="ticker"]').getByTestId("next")).toHaveText("paused");

  await open("/schedules/ticker");
  await press(page, hydrated, page.getByTestId("delete-schedule"));
  await expect(page).toHaveURL(/\/schedules$/);
  await expect(page.getByTestId("no-schedules")).toBeVisible();
});
