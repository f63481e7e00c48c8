// A live GraphQL endpoint for tests: graphql-yoga serving a small schema on
// 127.0.0.1 at the port given as the first argument (0 picks one); it prints
// "listening <port>" when ready. With --no-introspection it refuses
// introspection queries, as hardened endpoints do. With
// --require-header NAME=VALUE or --require-query NAME=VALUE (each may repeat)
// it answers every request that lacks that header or query parameter value
// with 401 and a GraphQL error that echoes what it received, as careless
// endpoints do.
import { createServer } from 'node:http'
import { createSchema, createYoga } from 'graphql-yoga'
import { NoSchemaIntrospectionCustomRule } from 'graphql'

const port = Number(process.argv[2] ?? 0)
const introspection = !process.argv.includes('--no-introspection')

// required returns the NAME=VALUE pairs given after flag.
function required(flag) {
  const pairs = []
  process.argv.forEach((arg, i) => {
    if (arg !== flag) return
    const pair = process.argv[i + 1] ?? ''
    const eq = pair.indexOf('=')
    if (eq < 1) throw new Error(`${flag} wants NAME=VALUE, got ${JSON.stringify(pair)}`)
    pairs.push([pair.slice(0, eq), pair.slice(eq + 1)])
  })
  return pairs
}
const requiredHeaders = required('--require-header')
const requiredQuery = required('--require-query')

// refusal says what a request lacks, or returns '' when it may pass.
function refusal(req) {
  for (const [name, want] of requiredHeaders) {
    const got = req.headers[name.toLowerCase()]
    if (got !== want) return `header ${name} ${got === undefined ? 'is missing' : 'is wrong: got ' + got}`
  }
  const query = new URL(req.url, 'http://localhost').searchParams
  for (const [name, want] of requiredQuery) {
    const got = query.get(name)
    if (got !== want) return `query parameter ${name} ${got === null ? 'is missing' : 'is wrong: got ' + got}`
  }
  return ''
}

const typeDefs = /* GraphQL */ `
  "A book in the library."
  type Book { id: ID!, title: String!, author: Author!, year: Int, tags: [String!]! }
  type Author { id: ID!, name: String!, books: [Book!]! }
  enum Order { NEWEST, OLDEST }
  input BookInput { title: String!, authorId: ID!, year: Int, tags: [String!] }
  type Query {
    "Look up a book by id."
    book(id: ID!): Book
    "List books, newest first unless told otherwise."
    books(first: Int = 10, order: Order): [Book!]!
    authors: [Author!]!
  }
  type Mutation {
    "Add a book."
    addBook(input: BookInput!): Book!
  }
`
const authors = [{ id: 'a1', name: 'Ursula K. Le Guin' }]
const books = [{ id: 'b1', title: 'The Dispossessed', authorId: 'a1', year: 1974, tags: ['anarchy'] }]
const resolvers = {
  Query: {
    book: (_, { id }) => books.find((b) => b.id === id) ?? null,
    books: (_, { first, order }) => (order === 'OLDEST' ? [...books] : [...books].reverse()).slice(0, first),
    authors: () => authors,
  },
  Mutation: {
    addBook: (_, { input }) => {
      const b = { id: 'b' + (books.length + 1), tags: [], ...input }
      books.push(b)
      return b
    },
  },
  Book: { author: (b) => authors.find((a) => a.id === b.authorId) },
  Author: { books: (a) => books.filter((b) => b.authorId === a.id) },
}
const yoga = createYoga({
  schema: createSchema({ typeDefs, resolvers }),
  graphiql: false,
  logging: false,
  plugins: introspection ? [] : [{ onValidate: ({ addValidationRule }) => addValidationRule(NoSchemaIntrospectionCustomRule) }],
})
const server = createServer((req, res) => {
  const why = refusal(req)
  if (why === '') return yoga(req, res)
  res.writeHead(401, { 'content-type': 'application/json' })
  res.end(JSON.stringify({ errors: [{ message: `Unauthorized: ${why} (request ${req.url})` }] }))
})
server.listen(port, '127.0.0.1', () => {
  console.log('listening ' + server.address().port)
})
process.on('SIGTERM', () => server.close(() => process.exit(0)))
