// An MCP agent for tests: the official TypeScript SDK's client over
// Streamable HTTP.
//
//   TOOLGATE_KEY=tgk_... node mcp-client.mjs URL < plan.json
//
// The key, taken from the environment so it stays out of argument lists, is
// sent as "Authorization: Bearer <key>" on every request. The plan on stdin is
// a JSON list of steps: {"method": "tools/list"} lists every tool (all pages),
// {"method": "tools/call", "name": NAME, "arguments": {...}} calls one. The
// script prints one JSON object: the negotiated protocolVersion, serverInfo,
// instructions and one result per step, or {"error": message} for a step that
// failed. It ends the session (DELETE) before it exits. When it cannot
// connect it prints {"error": message, "code": HTTP status or JSON-RPC code}
// and exits 1.
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'

const url = process.argv[2]
if (!url) {
  console.error('usage: TOOLGATE_KEY=tgk_... node mcp-client.mjs URL < plan.json')
  process.exit(2)
}

let input = ''
for await (const chunk of process.stdin) input += chunk
const plan = JSON.parse(input || '[]')

const headers = {}
if (process.env.TOOLGATE_KEY) headers.Authorization = `Bearer ${process.env.TOOLGATE_KEY}`
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } })
const client = new Client({ name: 'toolgate-test-sdk-client', version: '1.0.0' })

const message = (err) => (err instanceof Error ? err.message : String(err))

try {
  await client.connect(transport)
} catch (err) {
  console.log(JSON.stringify({ error: message(err), code: err?.code ?? null }))
  process.exit(1)
}

const out = {
  protocolVersion: transport.protocolVersion,
  sessionId: transport.sessionId ?? null,
  serverInfo: client.getServerVersion(),
  instructions: client.getInstructions() ?? '',
  results: [],
}
for (const step of plan) {
  try {
    switch (step.method) {
      case 'tools/list': {
        const tools = []
        let cursor
        do {
          const page = await client.listTools(cursor ? { cursor } : {})
          tools.push(...page.tools)
          cursor = page.nextCursor
        } while (cursor)
        out.results.push({ tools })
        break
      }
      case 'tools/call':
        out.results.push(await client.callTool({ name: step.name, arguments: step.arguments ?? {} }))
        break
      default:
        out.results.push({ error: `unknown step method ${JSON.stringify(step.method)}` })
    }
  } catch (err) {
    out.results.push({ error: message(err) })
  }
}

try {
  await transport.terminateSession()
} catch (err) {
  out.terminateError = message(err)
}
await client.close()
console.log(JSON.stringify(out))
