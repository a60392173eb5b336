import { resolve } from "node:path";
import { test, expect, newAccount, signUp, waitHydrated, Page } from "./fixtures";

const SDK = resolve(__dirname, "../../sdk/python");

/** A job that charts a falling loss with the SDK's draw_board, `steps` points, `every` s apart. */
async function submitBoardJob(page: Page, name: string, steps: number, every: number) {
  const program = [
    "import time, paddlecloud",
    `for step in range(${steps}):`,
    "    paddlecloud.draw_board(10.0 / (step + 1), 'train/loss')",
    "    if step % 5 == 0:",
    "        paddlecloud.draw_board(step / 100.0, 'eval/acc', step=step)",
    "    paddlecloud.flush_board()",
    `    time.sleep(${every})`,
  ].join("\n");
  const res = await page.request.post("/api/v1/jobs", {
    data: {
      name,
      command: ["python3", "-c", program],
      num_trainers: 1,
      env: [{ name: "PYTHONPATH", value: SDK }],
    },
  });
  expect(res.status(), await res.text()).toBe(201);
}

/** How many points the legend says `job` has on the chart of `tag`. */
async function points(page: Page, tag: string, job: string): Promise<number> {
  const legend = page.locator(`article[data-tag="${tag}"] .legend-item`, { hasText: job });
  const text = (await legend.textContent({ timeout: 10_000 })) ?? "";
  return Number(/(\d+) points/.exec(text)?.[1] ?? 0);
}

async function waitFinished(page: Page, name: string) {
  await expect(async () => {
    const job = await (await page.request.get(`/api/v1/jobs/${name}`)).json();
    expect(job.status).toBe("succeeded");
  }).toPass({ timeout: 60_000 });
}

test("a running job's board grows live, smooths, zooms, and its link shows the same view", async ({ page, open, hydrated, context }) => {
  await signUp(page, open, newAccount("board"));
  await submitBoardJob(page, "live", 80, 0.15);
  await open("/paddleboard");
  // The picker lists jobs that have logged metrics.
  await expect(async () => {
    await page.reload();
    await expect(page.getByTestId("job-picker")).toContainText("live", { timeout: 1000 });
  }).toPass({ timeout: 20_000 });
  if (hydrated) {
    // After the reloads: a box ticked before hydration would not navigate.
    await waitHydrated(page);
    await page.getByRole("checkbox", { name: /live/ }).check();
    await expect(page).toHaveURL(/job=live/);
  } else {
    await page.getByRole("checkbox", { name: /live/ }).check();
    await page.getByRole("button", { name: "Apply" }).click();
    await expect(page).toHaveURL(/job=live/);
  }
  const chart = page.locator('article[data-tag="train/loss"]');
  await expect(chart.locator('polyline[stroke-width="2"]').first()).toBeVisible();

  // New points appear while the job runs: by themselves when hydrated, on reload without JavaScript.
  const first = await points(page, "train/loss", "live");
  expect(first).toBeGreaterThan(0);
  if (hydrated) {
    await expect.poll(() => points(page, "train/loss", "live"), { timeout: 10_000 }).toBeGreaterThan(first);
  } else {
    await expect(async () => {
      await page.reload();
      expect(await points(page, "train/loss", "live")).toBeGreaterThan(first);
    }).toPass({ timeout: 10_000 });
  }
  await waitFinished(page, "live");
  if (!hydrated) await page.reload();
  await expect.poll(() => points(page, "train/loss", "live"), { timeout: 10_000 }).toBe(80);

  // Smoothing: redraws the chart and goes into the URL.
  const before = await chart.locator(".chart-svg").innerHTML();
  const slider = page.getByRole("slider");
  await slider.fill("0.9");
  if (!hydrated) await page.getByRole("button", { name: "Apply" }).click();
  await expect(page).toHaveURL(/smooth=0\.9/);
  await expect.poll(() => chart.locator(".chart-svg").innerHTML()).not.toBe(before);
  // The change loaded the page anew: its pointer island hydrates again.
  if (hydrated) await waitHydrated(page);

  // Zoom: dragged across the chart when hydrated; the same range as a link otherwise.
  if (hydrated) {
    await chart.scrollIntoViewIfNeeded();
    const box = (await chart.locator(".chart-overlay").boundingBox())!;
    await page.mouse.move(box.x + box.width * 0.4, box.y + box.height / 2);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * 0.7, box.y + box.height / 2, { steps: 5 });
    await page.mouse.up();
    // The zoomed page comes back to the chart (its anchor).
    await expect(page).toHaveURL(/xmin=\d+&xmax=\d+#chart-train%2Floss$/);
    await waitHydrated(page);
    await expect(chart).toBeInViewport();
    // The tooltip shows the value under the pointer.
    const zoomed = (await chart.locator(".chart-overlay").boundingBox())!;
    await page.mouse.move(zoomed.x + zoomed.width * 0.5, zoomed.y + zoomed.height / 2);
    await expect(chart.locator(".chart-tip")).toContainText("live");
  } else {
    await open(page.url() + "&xmin=20&xmax=50");
  }
  await expect(chart.getByRole("link", { name: "Reset zoom" })).toBeVisible();
  if (hydrated) {
    await expect.poll(() => points(page, "train/loss", "live")).toBeLessThan(80);
  } else {
    await expect.poll(() => points(page, "train/loss", "live")).toBe(31);
  }

  // The link, opened in a new page, shows the same charts.
  const link = page.url();
  const svg = await chart.locator(".chart-svg").innerHTML();
  const other = await context.newPage();
  await other.goto(link);
  const otherChart = other.locator('article[data-tag="train/loss"]');
  await expect(otherChart.locator('polyline[stroke-width="2"]').first()).toBeVisible();
  await expect(other.getByRole("slider")).toHaveValue("0.9");
  expect(await otherChart.locator("polyline").count()).toBe(await chart.locator("polyline").count());
  // The data line (the axes are polylines too, thinner).
  const line = (html: string) => /<polyline[^>]*stroke-width="2"[^>]*points="([^"]+)"/.exec(html)?.[1];
  expect(line(await otherChart.locator(".chart-svg").innerHTML())).toBe(line(svg));
  await other.close();

  // Exports: the chart as CSV, every chart as a zip.
  const csv = await page.request.get(await chart.getByRole("link", { name: "CSV" }).getAttribute("href") ?? "");
  expect(csv.status()).toBe(200);
  const rows = (await csv.text()).trim().split("\n");
  expect(rows[0]).toBe("job,step,wall_time,value");
  expect(rows).toHaveLength(81);
  const zip = await page.request.get(await page.getByRole("link", { name: /Download all charts/ }).getAttribute("href") ?? "");
  expect(zip.headers()["content-type"]).toBe("application/zip");
  expect((await zip.body()).subarray(0, 2).toString()).toBe("PK");

  // Another x axis: a range of steps means nothing in time, so the zoom goes.
  await page.getByLabel("Horizontal axis").selectOption("relative");
  if (!hydrated) await page.getByRole("button", { name: "Apply" }).click();
  await expect(page).toHaveURL(/x=relative/);
  await expect(chart.getByRole("link", { name: "Reset zoom" })).toHaveCount(0);
  await expect.poll(() => points(page, "train/loss", "live")).toBe(80);
});

test("two jobs compare on one chart per tag, and a bad tag filter says why", async ({ page, open }) => {
  await signUp(page, open, newAccount("cmp"));
  await submitBoardJob(page, "first", 10, 0);
  await submitBoardJob(page, "second", 20, 0);
  await waitFinished(page, "first");
  await waitFinished(page, "second");
  await open("/paddleboard?job=first&job=second&tags=loss");
  const chart = page.locator('article[data-tag="train/loss"]');
  await expect(chart.locator(".legend-item")).toHaveCount(2);
  await expect(page.locator('article[data-tag="eval/acc"]')).toHaveCount(0);
  expect(await points(page, "train/loss", "first")).toBe(10);
  expect(await points(page, "train/loss", "second")).toBe(20);
  await open("/paddleboard?job=first&tags=(unclosed");
  await expect(page.getByRole("alert")).toContainText("not a valid regular expression");
});
