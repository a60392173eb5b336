import { test, expect, newAccount, signUp } from "./fixtures";

test("ticking two jobs in the table opens their comparison: parameters, only differences, curves, CSV", async ({
  page,
  open,
}) => {
  const who = newAccount("cmp");
  await signUp(page, open, who);
  // Two runs recorded as local runs (nothing to wait for), a loss curve each.
  for (const [name, lr, last] of [["cmp-a", 0.1, 0.5], ["cmp-b", 0.2, 0.25]] as const) {
    const started = await page.request.post("/api/v1/local-runs", {
      data: { client_id: `e2e-${name}`, name, params: { lr, batch: 64 } },
    });
    expect(started.status(), await started.text()).toBe(201);
    const points = Array.from({ length: 10 }, (_, step) => ({
      tag: "loss", step, value: last + (9 - step) * 0.1, wall_time: 1.7e9 + step,
    }));
    const logged = await page.request.post(`/api/v1/jobs/${name}/metrics`, { data: points });
    expect(logged.status(), await logged.text()).toBe(200);
    const ended = await page.request.post(`/api/v1/local-runs/${name}/end`, { data: { outcome: "succeeded" } });
    expect(ended.status(), await ended.text()).toBe(200);
  }

  await open("/jobs");
  await page.getByLabel("Compare cmp-a").check();
  await page.getByLabel("Compare cmp-b").check();
  await page.getByTestId("compare-ticked").click();
  // The table lists the newest first, and the form sends the boxes in its order.
  await expect(page).toHaveURL(/\/jobs\/compare\?jobs=cmp-b&jobs=cmp-a$/);

  const table = page.getByTestId("comparison");
  await expect(table.locator("th[data-run]")).toHaveText([/^cmp-b/, /^cmp-a/]);
  await expect(table.locator('tr[data-param="lr"] td')).toHaveText(["0.2", "0.1"]);
  await expect(table.locator('tr[data-param="batch"] td')).toHaveText(["64", "64"]);
  await expect(table.locator('tr[data-metric="loss"] td')).toHaveText(["0.25", "0.5"]);
  const chart = page.locator('[data-testid="compare-chart"][data-tag="loss"]');
  await expect(chart.locator("svg")).toHaveCount(1);
  await expect(chart.locator(".legend-item")).toHaveText(["cmp-b", "cmp-a"]);

  // Only differences: a link, so it works with JavaScript off too.
  await page.getByTestId("only-differences").click();
  await expect(page).toHaveURL(/diff=1/);
  await expect(table.locator('tr[data-param="batch"]')).toHaveCount(0);
  await expect(table.locator('tr[data-param="lr"] td')).toHaveText(["0.2", "0.1"]);

  // The CSV link is the same comparison, as the REST route gives it.
  const href = await page.getByTestId("compare-csv").getAttribute("href");
  expect(href).toBe("/api/v1/jobs/compare.csv?jobs=cmp-b,cmp-a&diff=1");
  const csv = await page.request.get(href!);
  expect(csv.status()).toBe(200);
  const lines = (await csv.text()).trim().split("\n");
  expect(lines[0]).toBe("job,status,source,origin,created_at_ms,params.lr,metrics.loss");
  expect(lines[1]).toMatch(/^cmp-b,succeeded,local,.*,0\.2,0\.25$/);
  expect(lines[2]).toMatch(/^cmp-a,succeeded,local,.*,0\.1,0\.5$/);
});
