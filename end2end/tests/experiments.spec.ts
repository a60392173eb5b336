import { resolve } from "node:path";
import { test, expect, expectLive, newAccount, press, signUp } from "./fixtures";

const SDK = resolve(__dirname, "../../sdk/python");

/** A tiny template whose job charts loss = (x − 0.3)² + 1/(step + 1) for 3 steps, `pause` s apart. */
function bowl(pause: number) {
  const program = [
    "import time, paddlecloud",
    "for i in range(3):",
    "    paddlecloud.draw_board(({{x}} - 0.3) ** 2 + 1.0 / (i + 1), 'loss', step=i)",
    "    assert paddlecloud.flush_board()",
    `    time.sleep(${pause})`,
  ].join("\n");
  return {
    name: "bowl",
    parameters: [
      { name: "x", type: "float", min: 0.0, max: 1.0, default: 0.5 },
      { name: "opt", type: "enum", choices: ["adam", "sgd"], default: "sgd" },
    ],
    job: { command: ["python3", "-c", program], num_trainers: 1,
           trainer: { cpu: "100m", memory: "128Mi" }, env: [{ name: "PYTHONPATH", value: SDK }] },
  };
}

test("an experiment made from the form runs live to succeeded with its charts, pausing and resuming on the way", async ({
  page,
  open,
  hydrated,
}) => {
  test.setTimeout(180_000);
  const who = newAccount("tuner");
  await signUp(page, open, who);
  const saved = await page.request.post("/api/v1/templates", { data: bowl(1) });
  expect(saved.status(), await saved.text()).toBe(201);

  // From the template's page to the form, x searched, opt fixed.
  await open("/templates/bowl");
  await page.getByTestId("search-template").click();
  await expect(page).toHaveURL(/\/experiments\/new\?template=/);
  await page.getByLabel("Experiment name").fill("bowl-e2e");
  await page.getByLabel("x: fixed or searched").selectOption("search");
  await page.getByLabel("x: min").fill("0.1");
  await page.getByLabel("x: max").fill("0.9");
  await page.getByLabel("opt: fixed value").fill("adam");
  await page.getByLabel("Algorithm").selectOption("random");
  await page.getByLabel("Trials in all").fill("3");
  await page.getByLabel("Trials at once").fill("1");
  await page.getByTestId("start-experiment").click();
  await expect(page).toHaveURL(/\/experiments\/bowl-e2e$/);
  await expect(page.getByTestId("experiment-status")).toHaveText("running");

  // Pause: no new trial starts; resume, and it runs to its end.
  await press(page, hydrated, page.getByTestId("pause-experiment"));
  await expectLive(page, hydrated, page.getByTestId("experiment-status"), "paused");
  await press(page, hydrated, page.getByTestId("resume-experiment"));
  await expectLive(page, hydrated, page.getByTestId("experiment-status"), "running");
  await expectLive(page, hydrated, page.getByTestId("experiment-status"), "succeeded", 120_000);
  await expect(page.locator("tr[data-trial]")).toHaveCount(3);
  await expect(page.getByTestId("best-trial")).toContainText("Best trial");
  for (const chart of ["best-chart", "parallel-chart", "scatter-chart"]) {
    await expect(page.getByTestId(chart).locator("svg")).toBeVisible();
  }

  // Sorted by the objective, best first: the URL says so and keeps it.
  await page.getByTestId("sort-objective").click();
  await expect(page).toHaveURL(/sort=objective/);
  const first = Number(await page.locator("tr[data-trial]").first().getAttribute("data-trial"));
  await expect(page.getByTestId("best-trial")).toContainText(`Best trial: ${first} `);

  // The list shows it, and a trial's job names it in the job table.
  await open("/experiments");
  await expect(page.locator('tr[data-experiment="bowl-e2e"] [data-testid="trials"]')).toHaveText("3/3");
  await open("/jobs");
  await expect(page.locator('a[data-testid="experiment"]', { hasText: "experiment bowl-e2e #1" })).toBeVisible();
});
