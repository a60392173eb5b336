import { test, expect, expectLive, newAccount, press, signUp, waitHydrated, Page } from "./fixtures";
import { exportTinyModel, registerModel } from "./models";

// Batch scoring with the real tiny model in the shipped paddle-cpu
// environment (global-setup.ts keeps its build in the tools cache).

let tiny: Record<string, Buffer>;

test.beforeAll(() => {
  tiny = exportTinyModel();
});

/** A dataset holding `files`, saved as its version 1, through the REST API. */
async function savedDataset(page: Page, account: string, name: string, files: Record<string, string>) {
  const made = await page.request.post("/api/v1/datasets", { data: { name } });
  expect(made.status(), await made.text()).toBe(201);
  for (const [path, body] of Object.entries(files)) {
    const put = await page.request.put(`/api/v1/datasets/${account}/${name}/files/${path}`, {
      data: Buffer.from(body),
      headers: { "content-type": "application/octet-stream" },
    });
    expect(put.status(), await put.text()).toBe(201);
  }
  const saved = await page.request.post(`/api/v1/datasets/${account}/${name}/versions`, { data: {} });
  expect(saved.status(), await saved.text()).toBe(201);
}

test("a model version scores a dataset version from its page, and the job page shows the files scored and the output version", async ({
  page,
  open,
  hydrated,
}) => {
  test.setTimeout(300_000);
  const who = newAccount("score");
  await signUp(page, open, who);
  await registerModel(page, who.account, "tiny", tiny);
  await savedDataset(page, who.account, "rows", {
    "a.jsonl": '{"inputs": {"x": [[1, 2, 3, 4]]}}\n',
    "b.csv": "1,2,3,4\n0,0,0,0\n",
  });

  await open(`/models/${who.account}/tiny?version=1`);
  await page.locator('tr[data-version="1"]').getByTestId("score-version").click();
  await expect(page).toHaveURL(/\/scorings\/new\?model=/);
  if (hydrated) await waitHydrated(page);
  const form = page.getByTestId("scoring-form");
  await expect(form.getByLabel(/^Model/)).toHaveValue(`${who.account}/tiny:1`);
  // A version that is not there is refused next to its field.
  await form.getByLabel(/^Dataset version/).fill("rows:9");
  await form.getByLabel(/^Output dataset/).fill("scores");
  await form.getByLabel("Replicas").fill("2");
  await press(page, hydrated, page.getByTestId("start-scoring"));
  await expect(page.getByText("has no saved version 9")).toBeVisible();

  await page.getByTestId("scoring-form").getByLabel(/^Dataset version/).fill("rows:1");
  await page.getByTestId("scoring-form").getByLabel(/^Output dataset/).fill("scores");
  await page.getByTestId("scoring-form").getByLabel("Replicas").fill("2");
  await page.getByTestId("start-scoring").click();
  await expect(page).toHaveURL(/\/jobs\/score-tiny-[a-z0-9]+$/, { timeout: 20_000 });
  await expect(page.getByTestId("scoring")).toContainText(`${who.account}/rows:1`);
  // The first scoring may build paddle-cpu (from pip's cache).
  await expectLive(page, hydrated, page.getByTestId("scoring-output-state"), "complete", 240_000);
  await expect(page.getByTestId("scoring-progress")).toContainText("2 of 2 files scored");
  await expect(page.getByTestId("scoring-retry")).toHaveCount(0);

  await page.getByTestId("scoring-output").click();
  await expect(page).toHaveURL(new RegExp(`/datasets/${who.account}/scores\\?version=1$`));
  await expect(page.getByRole("link", { name: "b.csv.predictions.jsonl" })).toBeVisible();
  const b = await page.request.get(`/api/v1/datasets/${who.account}/scores/files/b.csv.predictions.jsonl?version=1`);
  const lines = (await b.text()).trim().split("\n").map((l) => Object.values(JSON.parse(l).outputs)[0]);
  expect(lines).toEqual([[0.5, 12.0], [0.5, -1.0]]);
});

test("a scoring whose file fails offers to retry what is left, and the next try skips what was scored", async ({
  page,
  open,
  hydrated,
}) => {
  test.setTimeout(300_000);
  const who = newAccount("retry");
  await signUp(page, open, who);
  await registerModel(page, who.account, "tiny", tiny);
  // Replica 0 takes a.csv and c.csv (whose second row is not numbers), replica 1 b.csv.
  await savedDataset(page, who.account, "rows", {
    "a.csv": "1,2,3,4\n",
    "b.csv": "0,0,0,0\n",
    "c.csv": "1,2,3,4\nx,y,z,w\n",
  });
  const started = await page.request.post("/api/v1/scorings", {
    data: { name: "bad-rows", model: "tiny", dataset: "rows", output: "scores", replicas: 2 },
  });
  expect(started.status(), await started.text()).toBe(201);

  await open("/jobs/bad-rows");
  await expectLive(page, hydrated, page.getByTestId("job-status"), "Failed", 240_000);
  await expect(page.getByTestId("scoring-progress")).toContainText("2 of 3 files scored");
  await expect(page.getByTestId("scoring-output-state")).toHaveText("open (uploading)");
  await press(page, hydrated, page.getByTestId("scoring-retry"));
  await expect(page).toHaveURL(/\/jobs\/bad-rows-try2-[a-z0-9]+$/, { timeout: 20_000 });
  await expect(page.getByTestId("scoring-attempt")).toContainText("Try 2 of this scoring");
  await expectLive(page, hydrated, page.getByTestId("job-status"), "Failed", 120_000);
  const next = new URL(page.url()).pathname.split("/").pop()!;
  const log = await page.request.get(`/api/v1/jobs/${next}/pods/trainer-1/log`);
  expect(await log.text()).toContain("1 of 3 file(s), 1 already scored");
});

test("hooks pasted into the form score a model that is not a paddle model", async ({ page, open, hydrated }) => {
  test.setTimeout(300_000);
  const who = newAccount("hooks");
  await signUp(page, open, who);
  await registerModel(page, who.account, "scale", { "factor.txt": Buffer.from("3") });
  await savedDataset(page, who.account, "rows", { "a.jsonl": '{"inputs": {"x": [1, 2]}}\n' });
  await open(`/scorings/new?model=${who.account}/scale&dataset=rows`);
  if (hydrated) await waitHydrated(page);
  const form = page.getByTestId("scoring-form");
  await form.getByLabel(/^Output dataset/).fill("scaled");
  await form.getByLabel(/^Hooks/).fill(
    [
      "def load(model_dir):",
      "    return float(open(model_dir + '/factor.txt').read())",
      "",
      "def predict(state, inputs):",
      "    return {'y': inputs['x'] * state}",
    ].join("\n"),
  );
  await press(page, hydrated, page.getByTestId("start-scoring"));
  await expect(page).toHaveURL(/\/jobs\/score-scale-[a-z0-9]+$/, { timeout: 20_000 });
  await expectLive(page, hydrated, page.getByTestId("scoring-output-state"), "complete", 240_000);
  const out = await page.request.get(`/api/v1/datasets/${who.account}/scaled/files/a.jsonl.predictions.jsonl?version=1`);
  expect(JSON.parse((await out.text()).trim())).toEqual({ outputs: { y: [3, 6] } });
});
