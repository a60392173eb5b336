import { test, expect, newAccount, signUp, Page } from "./fixtures";

// The test server's executor has 2 simulated GPUs (`--local-gpus 2`, this
// machine has none) and room to spare otherwise: only these tests ask for
// GPUs, so they can fill the machine without holding up the other specs.

/** A one-trainer job asking for `gpu` GPUs, through the REST API. */
async function submit(page: Page, name: string, gpu: number, script: string) {
  const res = await page.request.post("/api/v1/jobs", {
    data: {
      name,
      command: ["sh", "-c", script],
      num_ps: 0,
      num_trainers: 1,
      trainer: { cpu: "250m", memory: "128Mi", gpu },
    },
  });
  return res;
}

async function stop(page: Page, name: string) {
  const res = await page.request.post(`/api/v1/jobs/${name}/stop`);
  expect(res.status()).toBe(200);
}

test("a job with no room waits in the table with the reason, and the quota page shows the machine", async ({ page, open, hydrated }) => {
  test.setTimeout(90_000);
  await signUp(page, open, newAccount("sched"));
  expect((await submit(page, "holder", 2, "sleep 25")).status()).toBe(201);
  expect((await submit(page, "waiter", 1, "echo got my gpu; sleep 1")).status()).toBe(201);

  await open("/jobs");
  const waiter = page.locator('tr[data-job="waiter"]');
  const reason = waiter.getByTestId("reason");
  if (hydrated) {
    await expect(reason).toContainText(/^waiting for/, { timeout: 15_000 });
  } else {
    await expect(async () => {
      await page.reload();
      await expect(reason).toContainText(/^waiting for/, { timeout: 500 });
    }).toPass({ timeout: 15_000 });
  }
  await expect(waiter.getByTestId("status")).toHaveText("Pending");

  // The machine: its GPUs (simulated here), what waits, how limits hold.
  await open("/quota");
  const machine = page.getByTestId("machine");
  await expect(machine.locator("h2")).toHaveText("Where jobs run: local");
  await expect(machine.locator("tr[data-gpu]")).toHaveCount(2);
  await expect(machine.locator('tr[data-gpu="0"]')).toContainText("simulated");
  await expect(machine.getByTestId("queued")).toContainText(/wait|Nothing/);
  // As root on cgroup v1 (this project's machines and CI): a cgroup each;
  // elsewhere the sampler. Either way the page says which.
  await expect(machine.getByTestId("limits")).toContainText(/^Memory(, CPU and process)? limits: enforced by/);
  await expect(machine.locator('.machine-bar[data-resource="gpu"]')).toBeVisible();

  // Stopping the holder lets the waiter run on its GPU.
  await stop(page, "holder");
  await expect
    .poll(async () => (await (await page.request.get("/api/v1/jobs/waiter")).json()).status, { timeout: 30_000 })
    .toBe("succeeded");
  const pods = await (await page.request.get("/api/v1/jobs/waiter/pods")).json();
  expect(pods[0].gpus).toHaveLength(1);
});

test("a job larger than the machine is refused next to the field that asks too much", async ({ page, open }) => {
  await signUp(page, open, newAccount("toobig"));
  const res = await submit(page, "huge", 3, "true");
  expect(res.status()).toBe(400);
  const body = await res.json();
  expect(body.error.field).toBe("trainer.gpu");
  expect(body.error.message).toContain("3 GPUs");
  expect(body.error.message).toContain("2 GPUs");
});
