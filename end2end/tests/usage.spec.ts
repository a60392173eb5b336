import { test, expect, newAccount, signUp, adminSetsQuota, Page } from "./fixtures";

/** A one-trainer job submitted through the REST API with the page's session. */
async function submit(page: Page, name: string, script: string, cpu = "1") {
  const res = await page.request.post("/api/v1/jobs", {
    data: {
      name,
      command: ["sh", "-c", script],
      num_ps: 0,
      num_trainers: 1,
      trainer: { cpu, memory: "256Mi", gpu: 0 },
    },
  });
  expect(res.status(), await res.text()).toBe(201);
}

async function job(page: Page, name: string) {
  const res = await page.request.get(`/api/v1/jobs/${name}`);
  expect(res.status()).toBe(200);
  return res.json();
}

async function until(page: Page, name: string, status: string) {
  await expect.poll(async () => (await job(page, name)).status, { timeout: 20_000 }).toBe(status);
  return job(page, name);
}

test("a running job's resource charts show its CPU against the request and move while it runs", async ({ page, open, hydrated }) => {
  await signUp(page, open, newAccount("res"));
  await submit(page, "spin", "while :; do :; done", "2");
  await until(page, "spin", "running");
  await open("/jobs");
  await page.locator('tr[data-job="spin"]').getByRole("link", { name: "Resources" }).click();
  await expect(page).toHaveURL(/\/jobs\/spin\/resources$/);
  await expect(page.getByTestId("metrics-source")).toContainText("Sampled from /proc every 1 s");

  const cpu = page.locator('figure[data-metric="cpu"][data-role="trainer"]');
  const svg = cpu.locator(".chart-svg");
  const reload = async () => {
    if (!hydrated) await page.reload();
  };
  // A busy loop: about one core, drawn beside the 2 cores it asked for.
  await expect(async () => {
    await reload();
    const last = parseFloat((await cpu.getByTestId("last").innerText({ timeout: 1000 })).trim());
    // Clearly busy (the test's browser and server share the two cores).
    expect(last).toBeGreaterThan(0.25);
    expect(last).toBeLessThan(1.4);
  }).toPass({ timeout: 20_000 });
  await expect(cpu.locator(".legend .requested")).toHaveText("requested 2.00");
  await expect(page.locator('figure[data-metric="memory"][data-role="trainer"] .chart-svg svg')).toBeVisible();
  // No GPU here: said so, not drawn as zero.
  await expect(page.locator('figure[data-metric="gpu_util"] [data-testid="no-data"]')).toHaveText("no GPU");

  // Live: the chart is redrawn with new samples (hydrated, without a reload).
  const before = await svg.innerHTML();
  await expect(async () => {
    await reload();
    expect(await svg.innerHTML()).not.toEqual(before);
  }).toPass({ timeout: 15_000 });

  // Zooming in halves the range around its middle, in whole seconds: with
  // under 2 s shown (a fast machine gets here that soon) both ends round to
  // the same second and the page widens it to 1 s. Wait for seconds to halve.
  await expect(async () => {
    await open(page.url());
    const shown = page.getByTestId("range");
    const span = Number(await shown.getAttribute("data-to")) - Number(await shown.getAttribute("data-from"));
    expect(span).toBeGreaterThanOrEqual(6);
  }).toPass({ timeout: 20_000 });

  // Zooming puts the range in the URL; the link shows the same range.
  await page.getByTestId("zoom-in").click();
  await expect(page).toHaveURL(/from=\d+&to=\d+/);
  // The URL changes before the zoomed charts arrive: wait for the range they show.
  const zoomed = new URL(page.url()).searchParams;
  await expect(page.getByTestId("range")).toHaveAttribute("data-from", zoomed.get("from")!);
  await expect(page.getByTestId("range")).toHaveAttribute("data-to", zoomed.get("to")!);
  const range = await page.getByTestId("range").innerText();
  // A range of seconds is shown to the second.
  expect(range).toMatch(/\d\d:\d\d:\d\d – .*\d\d:\d\d:\d\d UTC$/);
  const url = page.url();
  await open(url);
  await expect(page.getByTestId("range")).toHaveText(range);

  const stop = await page.request.post("/api/v1/jobs/spin/stop");
  expect(stop.status()).toBe(200);
});

test("the quota page shows used against total and the hours of jobs that ran", async ({ page, open, hydrated, browser, baseURL }) => {
  const who = newAccount("quota");
  await signUp(page, open, who);
  // Only the site admin sets quotas.
  await adminSetsQuota(browser, baseURL, who.account, { cpu: "4", memory: "8Gi", jobs: "3" });
  await open("/quota");
  await expect(page).toHaveTitle("Quota · PaddleCloud");
  await expect(page.getByTestId("quota-account")).toHaveText(who.account);
  const bar = (r: string) => page.locator(`.quota-bar[data-resource="${r}"]`).getByTestId("quota-text");
  await expect(bar("cpu")).toHaveText("0 of 4");
  await expect(bar("memory")).toHaveText("0 B of 8 GiB");
  await expect(bar("gpu")).toHaveText("0 · no limit");

  // Two jobs run: 1 and 2 cores, about a second each.
  await submit(page, "first", "sleep 1", "1");
  await submit(page, "second", "sleep 1", "2");
  const ran = [await until(page, "first", "succeeded"), await until(page, "second", "succeeded")];
  const hours = ran.reduce(
    (sum, j, i) => sum + ((i + 1) * (j.finished_at - j.started_at)) / 3_600_000,
    0,
  );
  // As the page shows hours: small amounts with four decimals.
  const shown = hours >= 0.01 ? hours.toFixed(2) : hours.toFixed(4);
  expect(shown).not.toBe("0.0000");
  await open("/quota");
  const account = page.getByTestId("hours").locator('tr[data-who="account"] td');
  await expect(account.nth(1)).toHaveText(shown);
  await expect(account.nth(5)).toHaveText(shown);
  await expect(account.nth(2)).toHaveText("0.00");
  await expect(page.getByTestId("hours").locator(`tr[data-who="${who.email}"]`)).toBeVisible();
  await expect(page.locator(".usage .chart-svg svg")).toBeVisible();
  const href = await page.getByRole("link", { name: "Export CSV" }).getAttribute("href");
  const csv = await page.request.get(href!);
  expect(csv.status()).toBe(200);
  expect(await csv.text()).toContain(`account,,1d,${hours.toFixed(4)}`);

  // A job asking for more than is left: the dialog says so before submitting,
  // and the server refuses it with the same words.
  await open("/jobs?submit=1");
  const dialog = page.getByRole("dialog", { name: "Submit a training job" });
  await expect(dialog.getByTestId("quota-left")).toContainText("4 CPU");
  if (hydrated) {
    // The example job asks for 5 cores.
    await expect(dialog.getByTestId("quota-over")).toContainText("CPU: the job asks for 5, 4 of 4 is left (1 over)");
  }
  await dialog.getByLabel("Name").fill("too-big");
  await dialog.getByRole("button", { name: "Submit" }).click();
  await expect(page.getByRole("alert").filter({ hasText: "Over the account's quota" }).first()).toBeVisible();
});
