import { test, expect, expectLive, newAccount, signUp } from "./fixtures";

// Prints a line, runs for a moment, and fails with exit code 3.
const FAILS = ["sh", "-c", "echo hello from $TRAINING_ROLE; sleep 2; exit 3"];

test("a job's page follows it live to its failure, with the timeline, replicas and log", async ({ page, open, hydrated }) => {
  await signUp(page, open, newAccount("jobpage"));
  const made = await page.request.post("/api/v1/jobs", {
    data: { name: "story", command: FAILS, num_trainers: 1, trainer: { cpu: "100m", memory: "64Mi" } },
  });
  expect(made.status(), await made.text()).toBe(201);

  // The job table opens the job's page.
  await open("/jobs");
  await page.locator('tr[data-job="story"]').getByRole("link", { name: "story", exact: true }).click();
  await expect(page).toHaveURL(/\/jobs\/story$/);
  await expect(page.getByRole("heading", { level: 1 })).toContainText("story");
  await expectLive(page, hydrated, page.getByTestId("job-status"), "Failed");

  // What happened, newest first, the replica's failure with its exit code.
  const timeline = page.getByTestId("timeline");
  await expect(timeline.locator("li").first()).toContainText("Failed");
  await expect(timeline).toContainText("trainer-0 failed (exit 3)");
  await expect(timeline.locator("li").last()).toContainText("Pending");
  await expect(page.locator('tr[data-pod="trainer-0"]').getByTestId("exit-code")).toHaveText("3");
  await expect(page.getByTestId("job-command")).toHaveText("sh -c 'echo hello from $TRAINING_ROLE; sleep 2; exit 3'");

  // Its log, in place; a replica's "Log" link keeps it on this page.
  await expect(page.getByTestId("log-console").getByTestId("log")).toContainText("hello from TRAINER");
  await page.locator('tr[data-pod="trainer-0"]').getByRole("link", { name: "Log" }).click();
  await expect(page).toHaveURL(/\/jobs\/story\?pod=trainer-0#log$/);
  await expect(page.getByTestId("log-console").locator(".pod.current")).toContainText("trainer-0");
});

test("run again with changes starts from the job's spec, and Delete goes back to the table", async ({ page, open, hydrated }) => {
  await signUp(page, open, newAccount("again"));
  const made = await page.request.post("/api/v1/jobs", {
    data: { name: "first", command: FAILS, num_trainers: 1, env: [{ name: "FOO", value: "bar" }],
            trainer: { cpu: "100m", memory: "64Mi" } },
  });
  expect(made.status(), await made.text()).toBe(201);
  await open("/jobs/first");
  await expectLive(page, hydrated, page.getByTestId("job-status"), "Failed");

  await page.getByTestId("run-again").click();
  const dialog = page.getByRole("dialog", { name: "Submit a training job" });
  await expect(dialog).toBeVisible();
  await expect(dialog.getByLabel("Name")).toHaveValue("first-2");
  await expect(dialog.getByLabel("Command")).toHaveValue("sh -c 'echo hello from $TRAINING_ROLE; sleep 2; exit 3'");
  await expect(dialog.getByLabel("Environment variables (KEY=VALUE per line)")).toHaveValue("FOO=bar");
  await dialog.getByLabel("Command").fill("sh -c 'echo fixed; exit 0'");
  await dialog.getByRole("button", { name: "Submit" }).click();
  await expect(dialog).toBeHidden();
  await expect(page).toHaveURL(/\/jobs$/);
  await expect(page.locator('tr[data-job="first-2"]')).toBeVisible();

  await open("/jobs/first-2");
  await expectLive(page, hydrated, page.getByTestId("job-status"), "Succeeded");
  await expect(page.getByTestId("job-facts")).toContainText("FOO=bar");

  // Delete from the page: back at the table, the job gone.
  await page.getByTestId("job-stop-or-delete").click();
  await expect(page).toHaveURL(/\/jobs$/);
  await expect(page.locator('tr[data-job="first-2"]')).toHaveCount(0);
  await expect(page.locator('tr[data-job="first"]')).toBeVisible();
});

test("another account's job page says it is not found", async ({ page, open }) => {
  await signUp(page, open, newAccount("nosy"));
  const res = await page.goto("/jobs/nobody-here");
  expect(res?.status()).toBe(404);
  await expect(page.getByRole("alert")).toContainText("Job “nobody-here”");
});
