import { test, expect, newAccount, press, signUp } from "./fixtures";

test("an environment saved from the form builds from PyPI with its log shown, and a bad requirement is refused at its field", async ({
  page,
  open,
  hydrated,
}) => {
  test.setTimeout(300_000);
  await signUp(page, open, newAccount("envs"));
  await open("/environments");
  // The shipped ones, published for everyone.
  await expect(page.locator('tr[data-environment="paddlecloud/paddle-cpu"]')).toBeVisible();
  await expect(page.locator('tr[data-environment="paddlecloud/minimal"]')).toContainText("the SDK only");

  await page.getByLabel("Name", { exact: true }).fill("toml");
  await page.getByLabel("pip requirements, one per line").fill("tomli-w==1.0.0\n--index-url http://elsewhere");
  await press(page, hydrated, page.getByRole("button", { name: "Save and build" }));
  // Shown at the field it is about (the page came back from the server).
  await expect(page.getByRole("alert")).toContainText("pip options are not allowed");

  await page.getByLabel("Name", { exact: true }).fill("toml");
  await page.getByLabel("pip requirements, one per line").fill("tomli-w==1.0.0");
  await press(page, hydrated, page.getByRole("button", { name: "Save and build" }));
  await expect(page).toHaveURL(/\/environments\/toml$/);
  await expect(page.getByRole("heading", { name: /\/toml$/ })).toBeVisible();
  await expect(page.getByTestId("reference")).toContainText("/toml:1");
  // Built while the page is open: live with JavaScript, on reload without.
  await expect(async () => {
    if (!hydrated) await page.reload();
    await expect(page.getByTestId("build-state").first()).toHaveText("Ready", { timeout: 3_000 });
  }).toPass({ timeout: 240_000 });
  await expect(page.getByTestId("build-log")).toContainText("Successfully installed tomli-w-1.0.0");

  // A job that names it records the exact version.
  const job = await page.request.post("/api/v1/jobs", {
    data: { name: "in-toml", command: ["python", "-c", "import tomli_w"], num_trainers: 1,
            trainer: { cpu: "250m", memory: "128Mi" }, environment: "toml" },
  });
  expect(job.status(), await job.text()).toBe(201);
  expect((await job.json()).spec.environment).toMatch(/\/toml:1$/);
});
