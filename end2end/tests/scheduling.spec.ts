import { test, expect, newAccount, signUp, Page } from "./fixtures";

// The test server's executor has 2 simulated GPUs (`--local-gpus 2`, this
// machine has none) and room to spare otherwise: only these tests ask for
// GPUs, so they can fill the machine without holding up the other specs.
// They run one after another (each fills the GPUs); the other project's
// run of them may overlap, so none counts on being alone in the queue.
test.describe.configure({ mode: "serial" });

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

async function status(page: Page, name: string) {
  return (await (await page.request.get(`/api/v1/jobs/${name}`)).json()).status;
}

/** A one-trainer `sleep 120` of `gpu` GPUs at `priority`, through the REST API. */
async function sleeper(page: Page, name: string, gpu: number, priority = "normal") {
  const res = await page.request.post("/api/v1/jobs", {
    data: {
      name,
      command: ["sleep", "120"],
      num_trainers: 1,
      trainer: { cpu: "250m", memory: "128Mi", gpu },
      priority,
    },
  });
  expect(res.status(), await res.text()).toBe(201);
}

test("the queue page lists waiting jobs in order, high priority first, with what each waits for and behind whom", async ({ page, open, hydrated }) => {
  test.setTimeout(120_000);
  await signUp(page, open, newAccount("queue"));
  try {
    await sleeper(page, "holder", 2);
    await expect.poll(() => status(page, "holder"), { timeout: 60_000 }).toBe("running");
    await sleeper(page, "steady", 1);

    // The high one from the dialog: an owner may ask for it.
    await open("/jobs?submit=1");
    const dialog = page.getByRole("dialog", { name: "Submit a training job" });
    await dialog.getByLabel("Name").fill("urgent");
    await dialog.getByLabel("Command").fill("sleep 120");
    await dialog.getByLabel("Count").first().fill("0");
    await dialog.getByLabel("Count").nth(1).fill("1");
    await dialog.getByLabel("CPU each").nth(1).fill("250m");
    await dialog.getByLabel("Memory each").nth(1).fill("128Mi");
    await dialog.getByLabel("GPU each").fill("1");
    await dialog.getByLabel("Priority", { exact: true }).selectOption("high");
    await dialog.getByRole("button", { name: "Submit" }).click();
    await expect.poll(() => status(page, "urgent"), { timeout: 15_000 }).toBe("pending");
    expect((await (await page.request.get("/api/v1/jobs/urgent")).json()).spec.priority).toBe("high");

    await open("/quota");
    await page.getByTestId("queue-link").click();
    await expect(page).toHaveURL(/\/queue$/);
    await expect(page.getByTestId("queue-rule")).toContainText("high priority first");
    const urgent = page.getByTestId("waiting").locator('tr[data-name="urgent"]');
    const steady = page.getByTestId("waiting").locator('tr[data-name="steady"]');
    await expect(urgent.getByTestId("priority")).toHaveText("high");
    await expect(urgent.getByTestId("reason")).toContainText(/^waiting for (1 GPU|its turn)/);
    await expect(urgent.getByTestId("held-by")).toContainText("job holder");
    const position = async (row: typeof urgent) => Number(await row.getAttribute("data-position"));
    expect(await position(urgent)).toBeLessThan(await position(steady));
    await expect(page.getByTestId("holding").locator('tr[data-name="holder"]')).toBeVisible();

    // The holder stops: the high one starts, and the page follows.
    expect((await page.request.post("/api/v1/jobs/holder/stop")).status()).toBe(200);
    await expect.poll(() => status(page, "urgent"), { timeout: 60_000 }).toBe("running");
    if (hydrated) {
      await expect(urgent).toHaveCount(0, { timeout: 15_000 });
    } else {
      await expect(async () => {
        await page.reload();
        await expect(urgent).toHaveCount(0, { timeout: 500 });
      }).toPass({ timeout: 15_000 });
    }
    await expect(page.getByTestId("holding").locator('tr[data-name="urgent"]')).toBeVisible();
  } finally {
    // The GPUs go back at once: the other tests here wait for them.
    for (const name of ["holder", "urgent", "steady"]) {
      await page.request.post(`/api/v1/jobs/${name}/stop`);
    }
  }
});
