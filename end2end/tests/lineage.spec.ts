import { test, expect, newAccount, signUp, Page } from "./fixtures";

/** Waits until job `name` of the page's account has `status`. */
async function jobDone(page: Page, name: string, status: string) {
  await expect(async () => {
    const res = await page.request.get(`/api/v1/jobs/${name}`);
    expect((await res.json()).status).toBe(status);
  }).toPass({ timeout: 60_000 });
}

test("a model version's page says what trained it and draws its lineage, each box a link, shareable", async ({
  page,
  open,
}) => {
  const who = newAccount("lin");
  await signUp(page, open, who);
  const post = async (path: string, data: object) => {
    const res = await page.request.post(path, { data });
    expect(res.status(), `${path}: ${await res.text()}`).toBeLessThan(300);
  };
  await post("/api/v1/datasets", { name: "mnist" });
  await post("/api/v1/jobs", {
    name: "fit",
    num_trainers: 1,
    command: ["true"],
    trainer: { cpu: "100m", memory: "64Mi" },
    datasets: ["mnist"],
  });
  await jobDone(page, "fit", "succeeded");
  await post("/api/v1/models", { name: "lenet" });
  await post(`/api/v1/models/${who.account}/lenet/versions`, { description: "from fit", job: "fit" });
  const put = await page.request.put(`/api/v1/models/${who.account}/lenet/files/model.txt?version=1`, {
    data: Buffer.from("weights"),
    headers: { "content-type": "application/octet-stream" },
  });
  expect(put.status(), await put.text()).toBe(201);
  await post(`/api/v1/models/${who.account}/lenet/versions/1/finish`, {});

  await open(`/models/${who.account}/lenet?version=1`);
  const section = page.getByTestId("lineage");
  await expect(section.getByRole("heading", { name: "Lineage" })).toBeVisible();
  await expect(section.getByTestId("lineage-sentence")).toHaveText(`Trained by job fit from ${who.account}/mnist.`);
  const graph = section.getByRole("img", { name: `Lineage of ${who.account}/lenet v1` });
  await expect(graph).toBeVisible();
  await expect(graph.locator("g.node")).toHaveCount(3);
  expect((await graph.locator("text.edge-label").allTextContents()).sort()).toEqual(["read by", "registered"]);

  // Its box for the job opens the job's page, whose own graph has the job at its centre.
  await graph.locator('a[href="/jobs/fit"]').click();
  await expect(page).toHaveURL(/\/jobs\/fit$/);
  const jobGraph = page.getByTestId("lineage").locator("svg");
  await expect(jobGraph.locator("g.node.job.root")).toHaveCount(1);
  await expect(jobGraph.locator("g.node.model")).toHaveCount(1);

  // The shareable link shows the same graph on a page of its own.
  await page.getByTestId("lineage").getByTestId("lineage-link").click();
  await expect(page).toHaveURL(/\/lineage\?node=job%3A/);
  await expect(page.getByLabel("Node")).toHaveValue(`job:${who.account}/fit`);
  await expect(page.getByTestId("lineage").locator("g.node")).toHaveCount(3);
  // A node typed in the form (a plain GET form) shows that one's graph.
  await page.getByLabel("Node").fill(`dataset:${who.account}/mnist`);
  await page.getByRole("button", { name: "Show" }).click();
  await expect(page.getByTestId("lineage").locator("g.node.dataset.root")).toHaveCount(1);
  await page.getByLabel("Node").fill("nothing");
  await page.getByRole("button", { name: "Show" }).click();
  await expect(page.getByRole("alert")).toContainText("names nothing");
});
