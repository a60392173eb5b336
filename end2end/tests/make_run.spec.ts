import { test, expect, expectLive, newAccount, expectLabPageServed, press, runInLab, signUp, Page } from "./fixtures";

// Against the console global-setup.ts starts as `make run` runs it: no
// --notebook-python, no --serving-python, nothing installed by hand. Its
// first notebook waits for the JupyterLab the console builds from PyPI,
// and one in the shipped paddle-cpu environment for that build too.
test.use({ baseURL: process.env.PADDLECLOUD_DEFAULTS_URL });

function row(page: Page, name: string) {
  return page.locator(`tr[data-notebook="${name}"]`);
}

test("on the embedded defaults a new user's first notebook starts, and in the paddle-cpu environment its kernel imports paddle", async ({
  page,
  open,
  hydrated,
}) => {
  // Two builds from PyPI on a cold machine: JupyterLab, then PaddlePaddle.
  test.setTimeout(900_000);
  const who = newAccount("mkrun");
  await signUp(page, open, who);
  await open("/notebooks?new=1");
  const dialog = page.getByRole("dialog", { name: "New notebook" });
  await dialog.getByLabel("Name").fill("first");
  await dialog.getByLabel("CPU").fill("500m");
  // Hydrated, the notebook names paddle-cpu: only this test builds that
  // environment (with ipykernel) on this console, so it sees the build's
  // progress. Without JavaScript it names none and runs in JupyterLab's
  // build (which the two projects share: either may make it).
  if (hydrated) {
    await dialog.getByLabel("Python environment (optional; its kernel runs in it)").fill("paddlecloud/paddle-cpu");
  }
  await press(page, hydrated, dialog.getByRole("button", { name: "Create and start" }));
  await expect(page).toHaveURL(/\/notebooks$/);
  const r = row(page, "first");
  if (hydrated) {
    await expect(r.getByTestId("message")).toContainText(
      /^Preparing its environment paddlecloud\/paddle-cpu:1 \(its build log is on the environment's page\): \d+ packages? collected; now: /,
      { timeout: 600_000 },
    );
  }
  await expectLive(page, hydrated, r.getByTestId("status"), "Running", 840_000);
  const href = await r.getByTestId("open").getAttribute("href");
  expect(href).toBe(`/notebooks/${who.account}/first/lab`);

  if (hydrated) {
    await runInLab(
      page,
      href!,
      "Python 3 (paddlecloud/paddle-cpu:1)",
      "import paddle\nprint('paddle', paddle.__version__)",
      "paddle 3.3.1",
    );
  } else {
    await expectLabPageServed(page, href!);
  }
  await press(page, hydrated, r.getByRole("button", { name: "Stop" }));
  await expectLive(page, hydrated, r.getByTestId("status"), "Stopped");
});
