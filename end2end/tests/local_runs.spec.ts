import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir, hostname } from "node:os";
import { join, resolve } from "node:path";
import { test, expect, newAccount, signUp } from "./fixtures";

const SDK = resolve(__dirname, "../../sdk/python");

test("a script run on this machine shows up next to a cluster job: job table, its page, PaddleBoard", async ({
  page,
  open,
  baseURL,
}) => {
  test.setTimeout(120_000);
  const who = newAccount("atlas");
  await signUp(page, open, who);
  // A key for the script, as a user downloads credentials.json.
  const made = await page.request.post("/api/create_access_key", {
    form: { name: "laptop" },
    headers: { Accept: "application/json" },
  });
  expect(made.status(), await made.text()).toBe(200);
  const key = (await made.json()).key as string;

  // The cluster job: 20 points of train/loss.
  const cluster = [
    "import paddlecloud",
    "for step in range(20):",
    "    paddlecloud.draw_board(10.0 / (step + 1), 'train/loss')",
  ].join("\n");
  const submitted = await page.request.post("/api/v1/jobs", {
    data: { name: "cluster-fit", command: ["python3", "-c", cluster], num_trainers: 1,
            env: [{ name: "PYTHONPATH", value: SDK }] },
  });
  expect(submitted.status(), await submitted.text()).toBe(201);

  // The local run: the same loop, here, through the SDK.
  const local = [
    "import paddlecloud",
    "with paddlecloud.run(name='laptop-fit', params={'lr': 0.1}):",
    "    for step in range(15):",
    "        paddlecloud.draw_board(12.0 / (step + 1), 'train/loss')",
    "    print('trained on the laptop')",
  ].join("\n");
  execFileSync("python3", ["-c", local], {
    env: { ...process.env, PYTHONPATH: SDK, PADDLECLOUD_SERVER: baseURL!, PADDLECLOUD_KEY: key,
           PADDLECLOUD_SPOOL: mkdtempSync(join(tmpdir(), "spool-")) },
    timeout: 60_000,
  });
  await expect(async () => {
    const job = await (await page.request.get("/api/v1/jobs/cluster-fit")).json();
    expect(job.status).toBe("succeeded");
  }).toPass({ timeout: 60_000 });

  // The job table: filtered to local runs, marked with the machine.
  await open("/jobs?source=local");
  const row = page.locator('tr[data-job="laptop-fit"]');
  await expect(row.getByTestId("ran-on")).toHaveText(`local run on ${hostname()}`);
  await expect(row.getByTestId("status")).toHaveText("Succeeded");
  await expect(page.locator('tr[data-job="cluster-fit"]')).toHaveCount(0);

  // Its page: where it ran, its parameters, and "Run on the cluster".
  await open("/jobs/laptop-fit/resources");
  await expect(page.getByTestId("run-host")).toContainText(hostname());
  await expect(page.getByTestId("run-params")).toContainText("lr = 0.1");
  await expect(page.getByTestId("run-on-cluster")).toHaveAttribute("href", "/jobs/laptop-fit/template");

  // Its log console holds what it printed.
  await open("/jobs?log=laptop-fit");
  await expect(page.getByTestId("log")).toContainText("trained on the laptop");

  // PaddleBoard: one chart, both jobs, each with all its points.
  await open("/paddleboard?job=cluster-fit&job=laptop-fit&tags=loss");
  const chart = page.locator('article[data-tag="train/loss"]');
  await expect(chart.locator(".legend-item")).toHaveCount(2);
  await expect(chart.locator(".legend-item", { hasText: "laptop-fit" })).toContainText("15 points");
  await expect(chart.locator(".legend-item", { hasText: "cluster-fit" })).toContainText("20 points");
});
