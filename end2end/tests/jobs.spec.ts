import { test, expect, newAccount, signUp, Page } from "./fixtures";

// Parameter servers wait to be stopped; trainers print a few steps and exit 0.
const PROGRAM = `sh -c 'if [ "$TRAINING_ROLE" = PSERVER ]; then echo ps ready; exec sleep 120; fi; for i in 1 2 3 4 5 6; do echo "trainer $PADDLE_TRAINER_ID step $i"; sleep 0.4; done'`;

async function submitJob(page: Page, open: (p: string) => Promise<void>, name: string, command = PROGRAM, ps = "1") {
  await open("/jobs");
  await page.getByRole("link", { name: "Submit job" }).click();
  const dialog = page.getByRole("dialog", { name: "Submit a training job" });
  await expect(dialog).toBeVisible();
  await dialog.getByLabel("Name").fill(name);
  await dialog.getByLabel("Command").fill(command);
  await dialog.getByLabel("Count").first().fill(ps);
  await dialog.getByRole("button", { name: "Submit" }).click();
  await expect(dialog).toBeHidden();
}

function row(page: Page, name: string) {
  return page.locator(`tr[data-job="${name}"]`);
}

/** Waits for a job's status; without JavaScript the page is reloaded to see it. */
async function expectStatus(page: Page, hydrated: boolean, name: string, status: string) {
  if (hydrated) {
    await expect(row(page, name).getByTestId("status")).toHaveText(status, { timeout: 20_000 });
  } else {
    await expect(async () => {
      await page.reload();
      await expect(row(page, name).getByTestId("status")).toHaveText(status, { timeout: 500 });
    }).toPass({ timeout: 20_000 });
  }
}

test("a submitted job appears at once, goes Running and Succeeded, with per-role readiness", async ({ page, open, hydrated }) => {
  await signUp(page, open, newAccount("jobs"));
  await submitJob(page, open, "mnist");
  await expect(row(page, "mnist")).toBeVisible();
  await expectStatus(page, hydrated, "mnist", "Running");
  await expect(row(page, "mnist").getByTestId("trainers")).toHaveText("2/2");
  await expect(row(page, "mnist").getByTestId("ps")).toHaveText("1/1");
  await expectStatus(page, hydrated, "mnist", "Succeeded");
  await expect(row(page, "mnist").getByTestId("trainers")).toHaveText("0/2");
  await expect(row(page, "mnist").locator("td").nth(9)).toHaveText("local");
});

test("the submit dialog shows the job's total and refuses bad fields next to them", async ({ page, open, hydrated }) => {
  await signUp(page, open, newAccount("dlg"));
  await open("/jobs?submit=1");
  const dialog = page.getByRole("dialog", { name: "Submit a training job" });
  const total = dialog.getByTestId("job-total");
  // 1 PS × (1 CPU, 1 GiB) + 2 trainers × (2 CPU, 4 GiB)
  await expect(total).toContainText("5 CPU · 9 GiB memory · 0 GPU");
  // The room where jobs run: free now, of the machine's total (the test
  // console's --local-cpus 64 --local-memory 256Gi --local-gpus 2).
  const room = dialog.getByTestId("room-left");
  await expect(room).toContainText("Free on local now:");
  await expect(room).toContainText("of 64 CPU · 256 GiB memory · 2 GPU");
  if (hydrated) {
    await dialog.getByLabel("Count").nth(1).fill("4");
    await expect(total).toContainText("9 CPU · 17 GiB memory · 0 GPU");
    // 40 trainers of 2 CPU: more than the machine has in all.
    await dialog.getByLabel("Count").nth(1).fill("40");
    await expect(dialog.getByTestId("room-warning")).toContainText("could never start");
    await dialog.getByLabel("Count").nth(1).fill("2");
    await expect(dialog.getByTestId("room-warning")).toHaveCount(0);
  }
  await dialog.getByLabel("Name").fill("Bad Name");
  await dialog.getByRole("button", { name: "Submit" }).click();
  await expect(page.locator("#name-error")).toContainText("lower-case letters");
});

test("the log console lists pods, follows a log, switches pods, searches and downloads", async ({ page, open, hydrated }) => {
  await signUp(page, open, newAccount("logs"));
  await submitJob(page, open, "chatty");
  await expectStatus(page, hydrated, "chatty", "Running");
  await row(page, "chatty").getByRole("link", { name: "Log" }).click();
  const console_ = page.getByTestId("log-console");
  await expect(console_.locator("[data-pod]")).toHaveText([/ps-0/, /trainer-0/, /trainer-1/]);
  await expect(console_.getByTestId("log")).toContainText("ps ready");

  await console_.locator('[data-pod="trainer-1"]').click();
  await expect(page).toHaveURL(/pod=trainer-1/);
  if (hydrated) {
    // Following: later steps arrive without a reload.
    await expect(console_.getByTestId("log")).toContainText("trainer 1 step 6", { timeout: 15_000 });
  } else {
    await expectStatus(page, hydrated, "chatty", "Succeeded");
    await expect(console_.getByTestId("log")).toContainText("trainer 1 step 6");
  }

  await console_.getByRole("searchbox", { name: "Search the log" }).fill("step 3");
  await console_.getByLabel("Only matching lines").check();
  await console_.getByRole("button", { name: "Apply" }).click();
  await expect(page).toHaveURL(/find=step\+3/);
  await expect(console_.getByTestId("log").locator(".line")).toHaveCount(1);
  await expect(console_.getByTestId("log").locator("mark")).toHaveText("step 3");

  // The console's state is in the URL: a reload shows the same view.
  await page.reload();
  await expect(console_.getByTestId("log").locator(".line")).toHaveCount(1);

  const [download] = await Promise.all([
    page.waitForEvent("download"),
    console_.getByRole("link", { name: "Download" }).click(),
  ]);
  expect(download.suggestedFilename()).toBe("chatty-trainer-1.log");
  const text = await (await download.createReadStream()).toArray().then((c) => Buffer.concat(c).toString());
  expect(text.split("\n").filter((l) => l.includes("trainer 1 step")).length).toBe(6);
  expect(text).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z trainer 1 step 1$/m);
});

test("filters live in the URL, survive a reload, and stop works from the table", async ({ page, open, hydrated }) => {
  await signUp(page, open, newAccount("flt"));
  await submitJob(page, open, "quick", "true", "0");
  await submitJob(page, open, "slow", "sleep 120", "0");
  await expectStatus(page, hydrated, "quick", "Succeeded");
  await expectStatus(page, hydrated, "slow", "Running");

  await row(page, "slow").getByRole("button", { name: "Stop" }).click();
  await expectStatus(page, hydrated, "slow", "Stopped");

  await page.locator("select[name=status]").selectOption("succeeded");
  await page.getByRole("button", { name: "Apply" }).click();
  await expect(page).toHaveURL(/status=succeeded/);
  await expect(row(page, "quick")).toBeVisible();
  await expect(row(page, "slow")).toHaveCount(0);

  await page.reload();
  await expect(page.locator("select[name=status]")).toHaveValue("succeeded");
  await expect(row(page, "slow")).toHaveCount(0);

  await open("/jobs?q=slo");
  await expect(row(page, "slow")).toBeVisible();
  await expect(row(page, "quick")).toHaveCount(0);
});
