import { test, expect, newAccount, press, signUp } from "./fixtures";

// Prints a line and then waits, as a job stuck on a lock does.
const HANGS = ["python3", "-u", "-c", "import time\nprint('waiting for a lock', flush=True)\ntime.sleep(120)\n"];

test("a running job's page takes a stack dump of its replicas and shows it in the log console", async ({ page, open, hydrated }) => {
  test.setTimeout(120_000);
  await signUp(page, open, newAccount("dump"));
  const made = await page.request.post("/api/v1/jobs", {
    data: { name: "stuck", command: HANGS, num_trainers: 1, trainer: { cpu: "500m", memory: "256Mi" } },
  });
  expect(made.status(), await made.text()).toBe(201);
  await expect.poll(async () => (await (await page.request.get("/api/v1/jobs/stuck")).json()).status, { timeout: 30_000 }).toBe("running");

  // Printed before the page opens (without JavaScript its log is rendered once).
  await expect.poll(async () => (await page.request.get("/api/v1/jobs/stuck/pods/trainer-0/log")).text(), { timeout: 30_000 }).toContain("waiting for a lock");
  await open("/jobs/stuck");
  await expect(page.getByTestId("log-console").getByTestId("log")).toContainText("waiting for a lock");
  // Not stalled yet (the console waits half an hour): no banner, but the button.
  await expect(page.getByTestId("job-stalled")).toHaveCount(0);
  await press(page, hydrated, page.getByTestId("stack-dump"));

  // Back on the job's page with the dumped replica's log open: the dump is there.
  await expect(page).toHaveURL(/\/jobs\/stuck\?pod=trainer-0#log$/, { timeout: 60_000 });
  const log = page.getByTestId("log-console").getByTestId("log");
  await expect(log).toContainText("===== stack dump of trainer-0 (py-spy)", { timeout: 30_000 });
  await expect(log).toContainText('(idle): "MainThread"');
  await expect(log).toContainText("<module> (<string>:3)");
  await expect(log).toContainText("===== end of stack dump =====");
  await page.request.post("/api/v1/jobs/stuck/stop");
});
