-- Drives a headless Neovim against `lil lsp` for tests/lsp/test_neovim.py: waits for the
-- diagnostics of the opened file, asks for a hover on a step, waits for the code lenses, runs
-- the one above the durable function and reads the page it opens. Everything seen is written
-- as JSON to $LIL_OUT after each stage, so a failure shows how far it got.
local out = { messages = {} }
local show = vim.lsp.handlers["window/showMessage"]
vim.lsp.handlers["window/showMessage"] = function(err, result, ctx, config)
  table.insert(out.messages, result.message)
  return show(err, result, ctx, config)
end
local function save() vim.fn.writefile({ vim.json.encode(out) }, vim.env.LIL_OUT) end
local source = vim.api.nvim_get_current_buf()
vim.wait(20000, function() return #vim.diagnostic.get(source) > 0 end, 50)
out.diagnostics = {}
for _, d in ipairs(vim.diagnostic.get(source)) do
  table.insert(out.diagnostics, { code = d.code, message = d.message, lnum = d.lnum })
end
local line = tonumber(vim.env.LIL_STEP_LINE)
local col = tonumber(vim.env.LIL_STEP_COL)
local params = { textDocument = { uri = vim.uri_from_bufnr(source) }, position = { line = line, character = col } }
local res = vim.lsp.buf_request_sync(source, "textDocument/hover", params, 15000)
out.hover = {}
for _, r in pairs(res or {}) do
  if r.result then table.insert(out.hover, r.result.contents.value or vim.inspect(r.result.contents)) end
end
save()
local def_line = tonumber(vim.env.LIL_DEF_LINE)
vim.wait(15000, function()
  for _, lens in ipairs(vim.lsp.codelens.get(source)) do
    if lens.range.start.line == def_line and lens.command then return true end
  end
  return false
end, 50)
out.lenses = {}
for _, lens in ipairs(vim.lsp.codelens.get(source)) do
  if lens.command then table.insert(out.lenses, { line = lens.range.start.line, title = lens.command.title }) end
end
save()
vim.api.nvim_win_set_cursor(0, { def_line + 1, 4 })
vim.lsp.codelens.run()
local view
vim.wait(15000, function()
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_get_name(b):match("runs%-.*%.md$") then view = b return true end
  end
  return false
end, 50)
if view then
  out.view_name = vim.api.nvim_buf_get_name(view)
  out.view = vim.api.nvim_buf_get_lines(view, 0, -1, false)
end
save()
vim.cmd("qa!")
