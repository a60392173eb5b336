import { test, expect, newAccount, press, signUp, waitHydrated, Page, Locator } from "./fixtures";

// Each version's files hold its number; this script answers with it, so
// every answer says which version gave it (the replicas run the SDK's
// predict server with the Python global-setup.ts hands the server).
const SCRIPT = `import json, os

def load(model_dir):
    with open(os.path.join(model_dir, 'answer.json')) as f:
        return json.load(f)

def predict(state, inputs):
    return {'version': state['v']}
`;

/** Registers model `name` with versions 1..n, each holding its number. */
async function versions(page: Page, account: string, name: string, n: number) {
  const made = await page.request.post("/api/v1/models", { data: { name } });
  expect(made.status(), await made.text()).toBe(201);
  for (let v = 1; v <= n; v++) {
    const started = await page.request.post(`/api/v1/models/${account}/${name}/versions`, { data: {} });
    expect(started.status(), await started.text()).toBeLessThan(300);
    const put = await page.request.put(`/api/v1/models/${account}/${name}/files/answer.json?version=${v}`, {
      data: Buffer.from(JSON.stringify({ v })),
      headers: { "content-type": "application/octet-stream" },
    });
    expect(put.status(), await put.text()).toBe(201);
    const finished = await page.request.post(`/api/v1/models/${account}/${name}/versions/${v}/finish`);
    expect(finished.status(), await finished.text()).toBe(200);
  }
}

/** The version that answered one predict call. */
async function answered(page: Page, account: string): Promise<number> {
  const res = await page.request.post(`/serve/${account}/api/predict`, { data: { inputs: { x: [[1]] } } });
  expect(res.status(), await res.text()).toBe(200);
  return (await res.json()).outputs.version;
}

/** Reloads the page until `target` reads `text` (the release forms redirect back; the state follows). */
async function expectSoon(
  page: Page,
  target: () => Locator,
  text: string | RegExp | (string | RegExp)[],
  timeout = 60_000,
) {
  await expect(async () => {
    await page.reload();
    await expect(target()).toHaveText(text, { timeout: 1000 });
  }).toPass({ timeout });
}

test("a canary takes its share and is promoted, a shadow's answers are shown beside the main ones, each from the instance page", async ({
  page,
  open,
  hydrated,
}) => {
  test.setTimeout(240_000);
  const who = newAccount("rel");
  await signUp(page, open, who);
  await versions(page, who.account, "echo", 3);
  const launched = await page.request.post("/api/v1/serving", {
    data: {
      name: "api",
      model: "echo",
      version: 1,
      replicas: 1,
      script: SCRIPT,
      resources: { cpu: "100m", memory: "256Mi" },
    },
  });
  expect(launched.status(), await launched.text()).toBe(201);
  await expect(async () => expect(await answered(page, who.account)).toBe(1)).toPass({ timeout: 90_000 });

  await open("/serving/api");
  const section = () => page.getByTestId("releases");
  const track = (t: string) => section().locator(`tr[data-track="${t}"]`);
  await expect(section().getByRole("heading", { name: "Versions" })).toBeVisible();
  await expect(track("main").getByTestId("track-version")).toHaveText("v1");
  await expect(track("main").getByTestId("track-share")).toHaveText("100%");
  if (hydrated) await waitHydrated(page);

  // Start a canary of v2 at half the calls.
  const canary = section().locator("form.start-canary");
  await canary.getByLabel("canary version").selectOption({ label: "v2" });
  await canary.getByLabel("canary percent").fill("50");
  await press(page, hydrated, canary.getByTestId("start-canary"));
  await expectSoon(page, () => track("canary").getByTestId("track-version"), "v2");
  await expect(track("main").getByTestId("track-share")).toHaveText("50%");
  await expect(async () => expect(await answered(page, who.account)).toBe(2)).toPass({ timeout: 60_000 });
  const seen = new Set<number>();
  for (let i = 0; i < 10; i++) seen.add(await answered(page, who.account));
  expect([...seen].sort()).toEqual([1, 2]);

  // A shadow of v3 gets a copy of every call; callers never see v3.
  if (hydrated) await waitHydrated(page);
  const shadow = section().locator("form.start-shadow");
  await shadow.getByLabel("shadow version").selectOption({ label: "v3" });
  await press(page, hydrated, shadow.getByTestId("start-shadow"));
  await expectSoon(page, () => track("shadow").getByTestId("track-share"), "copy of 100%");
  await expect(async () => {
    expect(await answered(page, who.account)).not.toBe(3);
    await page.reload();
    await expect(section().getByTestId("shadow-agreement")).toContainText("0 of the last", { timeout: 1000 });
  }).toPass({ timeout: 60_000 });
  const firstCall = section().getByTestId("shadow-calls").locator("tbody tr").first();
  await expect(firstCall).toContainText("v3");
  await expect(firstCall).toContainText('"version":3');

  // The charts compare the versions side by side once a bucket closes.
  await expect(async () => {
    await page.reload();
    await expect(section().getByTestId("version-charts").locator("li")).toContainText(["v1 · main", "v2 · canary"], {
      timeout: 1000,
    });
  }).toPass({ timeout: 30_000 });

  // Promote: the main track rolls to v2, the canary ends; then the shadow ends.
  if (hydrated) await waitHydrated(page);
  await press(page, hydrated, section().getByTestId("promote"));
  await expectSoon(page, () => track("main").getByTestId("track-version"), "v2", 90_000);
  await expect(track("canary")).toHaveCount(0);
  for (let i = 0; i < 5; i++) expect(await answered(page, who.account)).toBe(2);
  if (hydrated) await waitHydrated(page);
  await press(page, hydrated, section().getByTestId("end-shadow"));
  await expectSoon(page, () => section().getByTestId("tracks").locator("tbody tr"), [/Main/]);

  // A canary of v3, rolled back with one click: every call is v2's again.
  if (hydrated) await waitHydrated(page);
  await section().locator("form.start-canary").getByLabel("canary version").selectOption({ label: "v3" });
  await press(page, hydrated, section().getByTestId("start-canary"));
  await expectSoon(page, () => track("canary").getByTestId("track-version"), "v3");
  if (hydrated) await waitHydrated(page);
  await press(page, hydrated, section().getByTestId("rollback"));
  await expectSoon(page, () => section().getByTestId("tracks").locator("tbody tr"), [/Main/]);
  for (let i = 0; i < 10; i++) expect(await answered(page, who.account)).toBe(2);
});

test("an instance launched from the dialog on an alias follows it: moved, the instance rolls to its version", async ({
  page,
  open,
  hydrated,
}) => {
  test.setTimeout(240_000);
  const who = newAccount("fol");
  await signUp(page, open, who);
  await versions(page, who.account, "echo", 2);
  const alias = `/api/v1/models/${who.account}/echo/aliases/production`;
  const set = await page.request.put(alias, { data: { version: 1 } });
  expect(set.status(), await set.text()).toBe(200);

  await open("/serving?launch=1");
  if (hydrated) await waitHydrated(page);
  const dialog = page.getByRole("dialog", { name: "Launch a serving instance" });
  await dialog.getByLabel("Name").fill("api");
  await dialog.getByLabel("Version", { exact: true }).selectOption({ label: "follow @production (now v1)" });
  await dialog.getByLabel("CPU each").fill("100m");
  await dialog.getByLabel("Memory each").fill("256Mi");
  await dialog.getByText("Inference configuration").click();
  await dialog.getByLabel(/^Serving script/).fill(SCRIPT);
  await press(page, hydrated, dialog.getByRole("button", { name: "Launch" }));
  await expect(dialog).toBeHidden();
  const row = page.locator('tr[data-serving="api"]');
  await expect(row.getByTestId("follows")).toHaveText("follows @production");
  await expect(async () => expect(await answered(page, who.account)).toBe(1)).toPass({ timeout: 90_000 });

  // The alias moves: the instance rolls to v2 and says so in its row.
  const moved = await page.request.put(alias, { data: { version: 2 } });
  expect(moved.status(), await moved.text()).toBe(200);
  await expect(async () => expect(await answered(page, who.account)).toBe(2)).toPass({ timeout: 90_000 });
  await expectSoon(page, () => row.locator("td").nth(1), /v2/);
});
