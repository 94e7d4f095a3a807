// Child-side runner for JavaScript / TypeScript tools (llm-functions JS, Loki TS). Runs under
// node, tsx, bun …, never in kep:
//
//     RUNTIME _child_js.mjs FILE FUNC object            < args.json   (fn(args), llm-functions)
//     RUNTIME _child_js.mjs FILE FUNC positional NAMES  < args.json   (fn(a, b, …), Loki)
//
// The return value goes to $LLM_OUTPUT (stdout when unset): strings, numbers and booleans as
// text, objects and arrays as JSON, null/undefined: nothing. A thrown error exits 1.
import { readFileSync, appendFileSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

async function main() {
  const [file, func, mode, namesJson] = process.argv.slice(2);
  let raw = "";
  try {
    raw = readFileSync(0, "utf8");
  } catch {
    raw = "";
  }
  const args = raw.trim() ? JSON.parse(raw) : {};
  const mod = await import(pathToFileURL(resolve(file)).href);
  const fn = mod[func] ?? mod.default?.[func] ?? (func === "default" ? mod.default : undefined);
  if (typeof fn !== "function") {
    console.error(`${file} exports no function ${func}`);
    process.exit(2);
  }
  const value =
    mode === "positional"
      ? await fn(...JSON.parse(namesJson).map((n) => args[n]))
      : await fn(args);
  if (value === null || value === undefined) return;
  const text = typeof value === "object" ? JSON.stringify(value, null, 2) : String(value);
  if (process.env.LLM_OUTPUT) appendFileSync(process.env.LLM_OUTPUT, text);
  else process.stdout.write(text);
}

main().catch((err) => {
  console.error(err && err.stack ? err.stack : String(err));
  process.exit(1);
});
