import { test, expect, newAccount, press, signUp } from "./fixtures";

/** A template whose job echoes its values; every parameter has a default. */
const TEMPLATE = {
  name: "sweep",
  description: "A quick sweep",
  parameters: [
    { name: "trainers", type: "int", min: 1, max: 2, default: 1, description: "trainers" },
    { name: "lr", type: "float", min: 0, max: 1, default: 0.1, description: "learning rate" },
    { name: "optimizer", type: "enum", choices: ["sgd", "adam"], default: "sgd" },
    { name: "data", type: "dataset", default: "nowhere" },
  ],
  job: {
    command: ["sh", "-c", "echo lr={{lr}} opt={{optimizer}} data={{data}}"],
    num_trainers: "{{trainers}}",
    trainer: { cpu: "250m", memory: "128Mi" },
  },
};

test("a template is run from a form made from its parameters, a bad value is refused next to its field, and the job says where it came from", async ({
  page,
  open,
  hydrated,
}) => {
  await signUp(page, open, newAccount("tmpl"));
  const saved = await page.request.post("/api/v1/templates", { data: TEMPLATE });
  expect(saved.status(), await saved.text()).toBe(201);
  const dataset = await page.request.post("/api/v1/datasets", { data: { name: "train" } });
  expect(dataset.status(), await dataset.text()).toBe(201);

  await open("/templates");
  const row = page.locator('tr[data-template="sweep"]');
  await expect(row.getByTestId("version")).toHaveText("v1");
  await row.getByRole("link", { name: "Run…" }).click();
  await expect(page).toHaveURL(/\/templates\/sweep\?owner=/);
  await expect(page.getByRole("heading", { name: "Run sweep" })).toBeVisible();
  // The fields carry the parameters' defaults and limits.
  const lr = page.getByLabel("lr (learning rate)");
  await expect(lr).toHaveValue("0.1");
  await expect(lr).toHaveAttribute("max", "1");
  await expect(page.getByLabel("trainers (trainers)")).toHaveValue("1");
  await expect(page.getByLabel("optimizer")).toHaveValue("sgd");

  // The default dataset does not exist: the server says so at its field.
  await press(page, hydrated, page.getByRole("button", { name: "Run" }));
  await expect(page.getByRole("alert")).toContainText("data: no dataset nowhere that you can read.");

  await page.getByLabel("data").fill("train");
  await page.getByLabel("lr (learning rate)").fill("0.5");
  await page.getByLabel("optimizer").selectOption("adam");
  await page.getByLabel(/Job name/).fill("sweep-one");
  await press(page, hydrated, page.getByRole("button", { name: "Run" }));
  await expect(page).toHaveURL(/\/jobs$/);
  const job = page.locator('tr[data-job="sweep-one"]');
  const origin = job.getByTestId("template");
  await expect(origin).toHaveText("from template sweep v1");
  await expect(origin).toHaveAttribute("title", "data=train, lr=0.5, optimizer=adam, trainers=1");
  const record = await (await page.request.get("/api/v1/jobs/sweep-one")).json();
  expect(record.spec.command[2]).toBe("echo lr=0.5 opt=adam data=train");
  expect(record.spec.template.values.lr).toBe(0.5);

  // Run again with changes: the form starts from that job's values.
  await page.locator('tr[data-job="sweep-one"]').getByTestId("run-again").click();
  await expect(page.getByTestId("from-job")).toContainText("sweep-one");
  await expect(page.getByLabel("lr (learning rate)")).toHaveValue("0.5");
  await expect(page.getByLabel("optimizer")).toHaveValue("adam");
  await expect(page.getByLabel("data")).toHaveValue("train");
  await page.getByLabel("lr (learning rate)").fill("0.75");
  await page.getByLabel(/Job name/).fill("sweep-two");
  await press(page, hydrated, page.getByRole("button", { name: "Run" }));
  await expect(page).toHaveURL(/\/jobs$/);
  await expect(page.locator('tr[data-job="sweep-two"]').getByTestId("template")).toHaveAttribute(
    "title",
    "data=train, lr=0.75, optimizer=adam, trainers=1",
  );

  // Save as template: the job's spec, given a parameter, saved and run.
  await page.locator('tr[data-job="sweep-two"]').getByTestId("save-as-template").click();
  await expect(page.getByRole("heading", { name: "Save sweep-two as a template" })).toBeVisible();
  await page.getByLabel("Name", { exact: true }).fill("echo-word");
  await page.getByLabel("Parameters (JSON)").fill('[{"name": "word", "type": "string", "default": "hello"}]');
  await page.getByLabel("Job (JSON)").fill(
    JSON.stringify({ command: ["echo", "{{word}}"], num_trainers: 1, trainer: { cpu: "250m", memory: "128Mi" } }),
  );
  await press(page, hydrated, page.getByRole("button", { name: "Save template" }));
  await expect(page.getByRole("heading", { name: "Run echo-word" })).toBeVisible();
  await expect(page.getByLabel("word")).toHaveValue("hello");
  await expect(page.getByTestId("quota-left")).toBeVisible();
});
