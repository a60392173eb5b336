import * as http from "node:http";
import { AddressInfo } from "node:net";

import { test, expect, newAccount, press, signUp } from "./fixtures";

/** A webhook receiver on a free port that records every POST's body. */
async function receiver(): Promise<{ url: string; bodies: string[]; close: () => void }> {
  const bodies: string[] = [];
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      bodies.push(body);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/hook`, bodies, close: () => server.close() };
}

test("a job page's Notify me subscribes a webhook that hears of its failure, tests it and unsubscribes", async ({ page, open, hydrated }) => {
  test.setTimeout(120_000);
  const hook = await receiver();
  try {
    const who = newAccount("ntf");
    await signUp(page, open, who);
    const made = await page.request.post("/api/v1/jobs", {
      data: { name: "doomed", command: ["sh", "-c", "sleep 4; exit 2"], num_trainers: 1, trainer: { cpu: "100m", memory: "64Mi" } },
    });
    expect(made.status()).toBe(201);

    await open("/jobs/doomed");
    await press(page, hydrated, page.getByTestId("notify-me"));
    await expect(page).toHaveURL(/\/notifications\?kind=job&name=doomed/);
    await expect(page.getByTestId("no-subscriptions")).toBeVisible();
    const form = page.getByTestId("subscribe-form");
    await expect(form.getByLabel("Its name (none for the account)")).toHaveValue("doomed");
    // A webhook without a URL is refused, naming the field.
    await form.getByLabel("Tell me by").selectOption("webhook");
    await press(page, hydrated, page.getByTestId("subscribe"));
    await expect(page.getByText("The URL must start with http:// or https://.")).toBeVisible();

    const again = page.getByTestId("subscribe-form");
    await again.getByLabel("Its name (none for the account)").fill("doomed");
    await again.getByLabel("Tell me by").selectOption("webhook");
    await again.getByLabel("Webhook URL").fill(hook.url);
    await press(page, hydrated, page.getByTestId("subscribe"));
    await expect(page).toHaveURL(/\/notifications$/);
    const row = page.getByTestId("subscriptions").locator("tbody tr");
    await expect(row).toHaveCount(1);
    await expect(row).toContainText("job doomed");
    await expect(row).toContainText(`webhook ${hook.url}`);
    await row.getByText("Signing secret").click();
    await expect(row.getByTestId("signing-secret")).toHaveText(/^whsec_/);

    // The job fails: the receiver hears of it, and the log says delivered.
    await expect.poll(() => hook.bodies.some((b) => b.includes('"job.failed"')), { timeout: 60_000 }).toBe(true);
    const delivered = page.locator('[data-testid="deliveries"] tr[data-event="failed"][data-status="delivered"]');
    await expect(async () => {
      await page.reload();
      await expect(delivered).toHaveCount(1, { timeout: 1_000 });
    }).toPass({ timeout: 30_000 });
    await expect(delivered).toContainText("job doomed in " + who.account + " failed");

    // A test goes out from the page.
    await press(page, hydrated, page.getByTestId("send-test"));
    await expect.poll(() => hook.bodies.some((b) => b.includes('"job.test"')), { timeout: 30_000 }).toBe(true);
    await open("/notifications?status=failed");
    await expect(page.getByTestId("no-deliveries")).toBeVisible();

    await open("/notifications");
    await press(page, hydrated, page.getByTestId("unsubscribe"));
    await expect(page.getByTestId("no-subscriptions")).toBeVisible();
    await expect(page.getByTestId("no-deliveries")).toBeVisible();
  } finally {
    hook.close();
  }
});
