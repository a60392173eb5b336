import { test, expect, expectLive, newAccount, expectLabPageServed, press, runInLab, signUp, waitHydrated, Page } from "./fixtures";
import { readFileSync } from "node:fs";
import { join } from "node:path";

function row(page: Page, name: string) {
  return page.locator(`tr[data-notebook="${name}"]`);
}

/** Creates notebook `name` from the page's dialog (a link, then a form) and waits until it runs. */
async function createNotebook(page: Page, open: (p: string) => Promise<void>, hydrated: boolean, name: string) {
  await open("/notebooks");
  await expect(page.getByTestId("no-notebooks")).toBeVisible();
  await page.getByRole("link", { name: "New notebook" }).click();
  await expect(page).toHaveURL(/new=1/);
  if (hydrated) await waitHydrated(page);
  const dialog = page.getByRole("dialog", { name: "New notebook" });
  await expect(dialog.getByTestId("notebook-total")).toHaveText("While it runs it holds 1 CPU · 2 GiB · 0 GPU");
  await dialog.getByLabel("Name").fill(name);
  await dialog.getByLabel("CPU").fill("500m");
  if (hydrated) {
    // The total follows the fields as they are typed.
    await expect(dialog.getByTestId("notebook-total")).toHaveText("While it runs it holds 500m CPU · 2 GiB · 0 GPU");
  }
  await press(page, hydrated, dialog.getByRole("button", { name: "Create and start" }));
  await expect(page).toHaveURL(/\/notebooks$/);
  await expectLive(page, hydrated, row(page, name).getByTestId("status"), "Running", 90_000);
}

test("a notebook is created, opened through the console, runs a cell that submits a job, stops, starts and is deleted", async ({
  page,
  open,
  hydrated,
}) => {
  test.setTimeout(240_000);
  const who = newAccount("nb");
  await signUp(page, open, who);
  await createNotebook(page, open, hydrated, "lab");
  const r = row(page, "lab");
  await expect(r.getByTestId("stops")).toHaveText("never");
  const href = await r.getByTestId("open").getAttribute("href");
  expect(href).toBe(`/notebooks/${who.account}/lab/lab`);

  if (hydrated) {
    // Real JupyterLab in the browser, every request and WebSocket through
    // the console with its session cookie alone.
    await runInLab(
      page,
      href!,
      "Python 3 (ipykernel)",
      "import paddlecloud\n" +
        "job = paddlecloud.create_cloud_job('nb-job', 1, '256Mi', 0, '250m', command=['true'])\n" +
        "print('submitted', job['name'])",
      "submitted nb-job",
    );
    await open("/jobs");
    await expect(page.locator('tr[data-job="nb-job"]').getByTestId("origin")).toHaveText("from notebook lab");
    await open("/notebooks");
  } else {
    await expectLabPageServed(page, href!);
  }

  await press(page, hydrated, r.getByRole("button", { name: "Stop" }));
  await expectLive(page, hydrated, r.getByTestId("status"), "Stopped");
  await expect(r.getByTestId("message")).toHaveText(`Stopped by ${who.email}.`);
  const closed = await page.request.get(`/notebooks/${who.account}/lab/api/status`);
  expect(closed.status()).toBe(503);

  await press(page, hydrated, r.getByRole("button", { name: "Start" }));
  await expectLive(page, hydrated, r.getByTestId("status"), "Running", 90_000);

  await r.getByText("Delete…").click();
  await press(page, hydrated, r.getByTestId("delete"));
  await expectLive(page, hydrated, page.getByTestId("no-notebooks"), /No notebook yet/);
});

test("a bad notebook name is refused next to the field", async ({ page, open, hydrated }) => {
  await signUp(page, open, newAccount("nbbad"));
  await open("/notebooks?new=1");
  const dialog = page.getByRole("dialog", { name: "New notebook" });
  await dialog.getByLabel("Name").fill("Not_OK");
  await press(page, hydrated, dialog.getByRole("button", { name: "Create and start" }));
  await expect(page.getByText("A notebook name has only lower-case letters, digits and '-'.")).toBeVisible();
});

test("a notebook whose server dies is running again and says its workspace is kept and its kernels' memory is gone", async ({
  page,
  open,
  hydrated,
}) => {
  test.setTimeout(120_000);
  const who = newAccount("nbdie");
  await signUp(page, open, who);
  await createNotebook(page, open, hydrated, "phoenix");
  // The server dies under it: its process group, as the console recorded it.
  const pidFile = join(process.env.PADDLECLOUD_E2E_DATA_DIR ?? "", "notebooks", who.account, "phoenix", "pid");
  process.kill(-Number(readFileSync(pidFile, "utf8").trim()), "SIGKILL");
  const r = row(page, "phoenix");
  await expectLive(page, hydrated, r.getByTestId("message"), /^Started again after JupyterLab exited with signal 9 \(SIGKILL\) at /, 60_000);
  await expect(r.getByTestId("status")).toHaveText("Running");
  await expect(r.getByTestId("message")).toContainText(
    "the workspace and its files are as they were; the kernels started afresh, so what they held in memory (variables, imports) is gone.",
  );
});
