import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { createInterface } from "node:readline";

/** An MCP CallToolResult, as `toolidx serve`'s execute_tool returns it (the tool's own, unchanged). */
export interface CallToolResult {
  content?: Array<{ type: string; text?: string; [key: string]: unknown }>;
  structuredContent?: unknown;
  isError?: boolean;
  [key: string]: unknown;
}

/** The tool answered isError, or toolidx refused the call (unknown, out of scope, invalid arguments). */
export class ToolError extends Error {
  readonly toolId: string;
  readonly result: CallToolResult;
  constructor(toolId: string, result: CallToolResult) {
    const text = (result.content ?? []).map((c) => c.text ?? "").join(" ").trim();
    super(`${toolId}: ${text.slice(0, 2000) || "the tool failed"}`);
    this.name = "ToolError";
    this.toolId = toolId;
    this.result = result;
  }
}

interface Pending {
  resolve: (value: unknown) => void;
  reject: (reason: Error) => void;
}

/** A minimal MCP client over stdio: starts `toolidx serve --db DB` once, then every call is a
 * `tools/call` of its `execute_tool` (scope, validation against the stored schema, timeout). */
export class ToolidxClient {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private readonly ready: Promise<unknown>;
  private stderr = "";

  constructor(command: string[], db: string, scopeArgs: string[]) {
    const [exe, ...pre] = command;
    this.child = spawn(exe ?? "toolidx", [...pre, "serve", "--db", db, ...scopeArgs], {
      stdio: ["pipe", "pipe", "pipe"],
    });
    this.child.stderr.on("data", (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString()).slice(-4000);
    });
    this.child.on("error", (err: Error) => this.failAll(err));
    this.child.on("exit", (code: number | null) =>
      this.failAll(new Error(`toolidx serve exited (${code ?? "signal"}): ${this.stderr.trim()}`)),
    );
    createInterface({ input: this.child.stdout }).on("line", (line: string) => this.onLine(line));
    this.ready = this.request("initialize", {
      protocolVersion: "2025-06-18",
      capabilities: {},
      clientInfo: { name: "toolidx-export-typescript", version: "1" },
    }).then(() => this.send({ jsonrpc: "2.0", method: "notifications/initialized" }));
    this.hold();
  }

  private send(message: object): void {
    this.child.stdin.write(JSON.stringify(message) + "\n");
  }

  private hold(): void {
    // keep node alive only while a request is waiting
    const busy = this.pending.size > 0;
    for (const h of [this.child, this.child.stdout, this.child.stderr, this.child.stdin] as unknown as Array<{
      ref?: () => void;
      unref?: () => void;
    }>) {
      if (busy) h.ref?.();
      else h.unref?.();
    }
  }

  private failAll(err: Error): void {
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
  }

  private onLine(line: string): void {
    let msg: { id?: unknown; result?: unknown; error?: { message?: string } };
    try {
      msg = JSON.parse(line) as typeof msg;
    } catch {
      return;
    }
    if (typeof msg.id !== "number") return;
    const p = this.pending.get(msg.id);
    if (p === undefined) return;
    this.pending.delete(msg.id);
    this.hold();
    if (msg.error !== undefined) p.reject(new Error(msg.error.message ?? "MCP error"));
    else p.resolve(msg.result);
  }

  request(method: string, params: object): Promise<unknown> {
    const id = this.nextId++;
    return new Promise<unknown>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.hold();
      this.send({ jsonrpc: "2.0", id, method, params });
    });
  }

  /** The tool's whole CallToolResult (refusals included, with isError). */
  async callResult(toolId: string, args: object, timeoutMs = 30000): Promise<CallToolResult> {
    await this.ready;
    const result = await this.request("tools/call", {
      name: "execute_tool",
      arguments: { tool_name: toolId, arguments: args, timeout_ms: timeoutMs },
    });
    return result as CallToolResult;
  }

  /** structuredContent when the tool sent some, else its text; ToolError on isError, and when
   * `structured` (the tool declares an output schema) and it sent no structuredContent. */
  async call(toolId: string, args: object, structured = false): Promise<unknown> {
    const result = await this.callResult(toolId, args);
    if (result.isError === true) throw new ToolError(toolId, result);
    if (result.structuredContent !== undefined && result.structuredContent !== null) return result.structuredContent;
    if (structured) throw new ToolError(toolId, { ...result, isError: true, content: [{ type: "text",
      text: "the tool declares an output schema but sent no structuredContent" }, ...(result.content ?? [])] });
    return (result.content ?? [])
      .filter((c) => c.type === "text")
      .map((c) => c.text ?? "")
      .join("\n");
  }

  close(): void {
    this.child.stdin.end();
    this.child.kill();
  }
}

let client: ToolidxClient | undefined;

/** Bind the wrappers to an index (default: the one they were exported from) and a toolidx command
 * (default: $TOOLIDX_COMMAND split on spaces, else `toolidx`). */
export function configure(options: { db?: string; command?: string[] } = {}): ToolidxClient {
  client?.close();
  const command = options.command ?? (process.env["TOOLIDX_COMMAND"] ?? "toolidx").split(" ").filter((s) => s);
  client = new ToolidxClient(command, options.db ?? TOOLIDX_DB, SCOPE_ARGS);
  return client;
}

/** Stop `toolidx serve` (and the servers it started). */
export function closeClient(): void {
  client?.close();
  client = undefined;
}

/** The client the wrappers use (started by the first call, or here). */
export function getClient(): ToolidxClient {
  return client ?? configure();
}

function callTool(toolId: string, args: object, structured = false): Promise<unknown> {
  return getClient().call(toolId, args, structured);
}
