import { randomBytes } from "node:crypto";
import { test, expect, expectLive, newAccount, press, signUp, waitHydrated, Page } from "./fixtures";
import { exportTinyModel, registerModel } from "./models";

/** The tiny model's files (`y = x @ W + b`: [[1, 2, 3, 4]] gives [[0.5, 12.0]]). */
let tiny: Record<string, Buffer>;

test.beforeAll(() => {
  tiny = exportTinyModel();
});

function row(page: Page, name: string) {
  return page.locator(`tr[data-serving="${name}"]`);
}

/** Waits for a cell of an instance's row to read `text` (see `expectLive`). */
async function expectCell(page: Page, hydrated: boolean, name: string, cell: string, text: string | RegExp, timeout = 20_000) {
  await expectLive(page, hydrated, row(page, name).getByTestId(cell), text, timeout);
}

/**
 * Opens the launch dialog from the page's button: a link, so a page load,
 * after which the dialog's islands (total, model picker) hydrate.
 */
async function openLaunch(page: Page, open: (p: string) => Promise<void>, hydrated: boolean) {
  await open("/serving");
  await page.getByRole("link", { name: "Launch" }).click();
  await expect(page).toHaveURL(/launch=1/);
  if (hydrated) await waitHydrated(page);
  const dialog = page.getByRole("dialog", { name: "Launch a serving instance" });
  await expect(dialog).toBeVisible();
  return dialog;
}

test("a model version is launched, answers predict calls, shows its traffic, scales, stops and is deleted", async ({
  page,
  open,
  hydrated,
  baseURL,
}) => {
  // Paddle's import takes seconds per replica on a small machine.
  test.setTimeout(240_000);
  const who = newAccount("srv");
  await signUp(page, open, who);
  await registerModel(page, who.account, "tiny", tiny);

  await open("/serving");
  await expect(page.getByRole("heading", { name: "Serving" })).toBeVisible();
  await expect(page.getByTestId("no-serving")).toBeVisible();
  let dialog = await openLaunch(page, open, hydrated);
  const total = dialog.getByTestId("serving-total");
  await expect(dialog.getByTestId("quota-left")).toBeVisible();
  await expect(dialog.getByLabel("Model", { exact: true })).toHaveValue(`${who.account}/tiny`);
  await expect(dialog.getByLabel("Version", { exact: true }).locator("option")).toHaveText(["Newest ready", "v1"]);
  // The total is there before anything is typed (with or without JavaScript).
  await expect(total).toContainText("1 × (1 CPU · 1 GiB · 0 GPU) = 1 CPU · 1 GiB · 0 GPU");
  if (hydrated) {
    // It follows the fields as they are typed.
    await dialog.getByLabel("Count").fill("3");
    await expect(total).toContainText("3 × (1 CPU · 1 GiB · 0 GPU) = 3 CPU · 3 GiB · 0 GPU");
    // A script file chosen on this computer lands in the editor.
    await dialog.getByText("Inference configuration").click();
    const script = "# chosen from a file\ndef predict(state, inputs):\n    return state.run(inputs)\n";
    await dialog.getByLabel("…or load it from a file").setInputFiles({
      name: "serve.py",
      mimeType: "text/x-python",
      buffer: Buffer.from(script),
    });
    await expect(dialog.getByTestId("script-loaded")).toHaveText("Loaded serve.py into the editor.");
    await expect(dialog.getByLabel(/^Serving script/)).toHaveValue(script);
    // This test serves the model as exported.
    await dialog.getByLabel(/^Serving script/).fill("");
  } else {
    // Without JavaScript the form posts, and a bad field is refused next to it.
    await dialog.getByLabel("Name").fill("tiny-api");
    await dialog.getByLabel("Count").fill("0");
    await press(page, hydrated, dialog.getByRole("button", { name: "Launch" }));
    await expect(page.locator("#replicas-error")).toContainText("At least one replica");
    await expect(row(page, "tiny-api")).toHaveCount(0);
    dialog = page.getByRole("dialog", { name: "Launch a serving instance" });
  }

  await dialog.getByLabel("Name").fill("tiny-api");
  await dialog.getByLabel("Version", { exact: true }).selectOption({ label: "v1" });
  await dialog.getByLabel("Count").fill("2");
  await dialog.getByLabel("CPU each").fill("500m");
  await dialog.getByLabel("Memory each").fill("512Mi");
  if (hydrated) await expect(total).toContainText("= 1 CPU · 1 GiB · 0 GPU");
  await press(page, hydrated, dialog.getByRole("button", { name: "Launch" }));
  await expect(dialog).toBeHidden();

  // The row is there at once, Pending while paddle loads the model.
  const r = row(page, "tiny-api");
  await expect(r).toBeVisible();
  await expect(r.getByTestId("status")).toHaveText("Pending");
  await expect(r.getByTestId("total")).toHaveText("1 CPU · 1 GiB · 0 GPU");
  await expect(r.getByTestId("replicas")).toHaveText(/^[01]\/2$/);
  const endpoint = `${baseURL}/serve/${who.account}/tiny-api`;
  await expect(r.getByTestId("endpoint")).toHaveText(endpoint);
  await expectCell(page, hydrated, "tiny-api", "status", "Ready", 90_000);
  await expectCell(page, hydrated, "tiny-api", "replicas", "2/2");

  // The endpoint shown answers predict calls (the session is enough).
  const shown = (await r.getByTestId("endpoint").innerText()).trim();
  for (let i = 0; i < 20; i++) {
    const res = await page.request.post(`${shown}/predict`, { data: { inputs: { x: [[1, 2, 3, 4]] } } });
    expect(res.status(), await res.text()).toBe(200);
    const body = await res.json();
    expect(Object.values(body.outputs)).toEqual([[[0.5, 12.0]]]);
  }
  // The rate is of closed 5-second buckets: it shows once one closes.
  await expect(async () => {
    if (!hydrated) await page.reload();
    const qps = parseFloat(await r.getByTestId("qps").innerText({ timeout: 1000 }));
    expect(qps).toBeGreaterThan(0);
  }).toPass({ timeout: 20_000 });
  await expect(r.getByTestId("errors")).toHaveText("0.0%");
  await expect(r.getByTestId("latency")).toHaveText(/^\d+\.\d \/ \d+\.\d ms$/);

  // Its traffic page charts the requests.
  await r.getByRole("link", { name: "Traffic" }).click();
  await expect(page).toHaveURL(/\/serving\/tiny-api$/);
  const qps = page.locator('figure.chart-card[data-metric="qps"]');
  await expect(async () => {
    if (!hydrated) await page.reload();
    await expect(qps.locator(".chart-svg svg")).toBeVisible({ timeout: 1000 });
  }).toPass({ timeout: 20_000 });
  await expect(qps.getByTestId("no-data")).toHaveCount(0);
  await expect(page.locator('figure.chart-card[data-metric="latency"] .chart-svg svg')).toBeVisible();
  await expect(page.locator('figure.chart-card[data-metric="errors"] .chart-svg svg')).toBeVisible();
  await page.getByTestId("zoom-in").click();
  await expect(page).toHaveURL(/from=\d+(\.\d+)?&to=\d+/);
  // Back to following now (the range bar's first link: the page without a range).
  await page.getByRole("navigation", { name: "Time range" }).getByRole("link", { name: "Live" }).click();
  await expect(page).not.toHaveURL(/from=/);
  await expect(qps.locator(".chart-svg svg")).toBeVisible();

  // Scaled down from the table.
  await open("/serving");
  await r.getByLabel("Replicas").fill("1");
  await press(page, hydrated, r.getByRole("button", { name: "Scale" }));
  await expectCell(page, hydrated, "tiny-api", "replicas", "1/1");
  await expect(r.getByTestId("total")).toHaveText("500m CPU · 512 MiB · 0 GPU");
  const res = await page.request.post(`${endpoint}/predict`, { data: { inputs: { x: [[1, 2, 3, 4]] } } });
  expect(res.status(), await res.text()).toBe(200);

  // Stopped, it answers no more; deleted, it is gone.
  await press(page, hydrated, r.getByRole("button", { name: "Stop" }));
  await expectCell(page, hydrated, "tiny-api", "status", "Stopped");
  await expect(r.getByRole("button", { name: "Scale" })).toHaveCount(0);
  const after = await page.request.post(`${endpoint}/predict`, { data: { inputs: { x: [[1, 2, 3, 4]] } } });
  expect(after.status()).toBeGreaterThanOrEqual(400);
  await press(page, hydrated, r.getByRole("button", { name: "Delete" }));
  await expect(r).toHaveCount(0);
  await expect(page.getByTestId("no-serving")).toBeVisible();
});

test("a model whose parameters do not load fails the instance with the reason", async ({ page, open, hydrated }) => {
  test.setTimeout(150_000);
  const who = newAccount("srvbad");
  await signUp(page, open, who);
  await registerModel(page, who.account, "broken", {
    "inference.json": tiny["inference.json"],
    "inference.pdiparams": randomBytes(4096),
  });

  const dialog = await openLaunch(page, open, hydrated);
  await dialog.getByLabel("Name").fill("broken-api");
  await dialog.getByLabel("CPU each").fill("250m");
  await dialog.getByLabel("Memory each").fill("512Mi");
  await press(page, hydrated, dialog.getByRole("button", { name: "Launch" }));
  await expect(dialog).toBeHidden();
  await expect(row(page, "broken-api")).toBeVisible();

  await expectCell(page, hydrated, "broken-api", "status", "Failed", 60_000);
  await expect(row(page, "broken-api").getByTestId("message")).toContainText("cannot load the model");
  await expect(row(page, "broken-api").getByTestId("replicas")).toHaveText("0/1");
  await expect(row(page, "broken-api").getByRole("button", { name: "Stop" })).toHaveCount(0);
  await press(page, hydrated, row(page, "broken-api").getByRole("button", { name: "Delete" }));
  await expect(row(page, "broken-api")).toHaveCount(0);
});
