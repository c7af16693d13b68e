-- Neovim 0.7.x headless client for `ddx lsp` (vim.lsp.start_client; vim.lsp.start
-- is 0.8+). Opens LSP_FILE as a log, waits for publishDiagnostics, prints them
-- as JSON and one line per diagnostic, then asserts the expected rule (LSP_EXPECT)
-- and stops the server through shutdown + exit.
-- Env: LSP_CMD (JSON array), LSP_FILE, LSP_EXPECT (rule id), LSP_TIMEOUT_MS.
local cmd = vim.fn.json_decode(os.getenv('LSP_CMD'))
local file = vim.fn.fnamemodify(os.getenv('LSP_FILE'), ':p')
local expect = os.getenv('LSP_EXPECT')
local timeout = tonumber(os.getenv('LSP_TIMEOUT_MS') or '10000')
local out = io.stdout
local result, init_err, exit_code

local client_id = vim.lsp.start_client({
  name = 'ddx',
  cmd = cmd,
  root_dir = vim.fn.fnamemodify(file, ':h'),
  handlers = {
    ['textDocument/publishDiagnostics'] = function(err, params, ctx, config)
      -- the default handler puts them into vim.diagnostic (what the user sees)
      vim.lsp.handlers['textDocument/publishDiagnostics'](err, params, ctx, config)
      if params and params.uri == vim.uri_from_fname(file) then result = params end
    end,
  },
  on_exit = function(code, signal)
    exit_code = code
    if not result then init_err = 'server exited ' .. code end
  end,
})
if not client_id then out:write('FAIL: start_client returned nil\n'); vim.cmd('cq 2') end

vim.cmd('edit ' .. vim.fn.fnameescape(file))
local bufnr = vim.api.nvim_get_current_buf()
vim.bo[bufnr].filetype = 'log' -- the languageId of didOpen
vim.lsp.buf_attach_client(bufnr, client_id)

local ok = vim.wait(timeout, function() return result ~= nil or init_err ~= nil end, 20)
if not ok or not result then
  out:write('FAIL: no publishDiagnostics within ' .. timeout .. 'ms ' .. tostring(init_err) .. '\n')
  vim.lsp.stop_client(client_id, true)
  vim.cmd('cq 1')
end
out:write(vim.fn.json_encode(result) .. '\n')
for _, d in ipairs(result.diagnostics) do
  out:write(string.format('%s:%d:%d: [%s] %s (%s)\n', file, d.range.start.line + 1,
    d.range.start.character + 1, d.code or '', d.message, d.source or ''))
end
local failed = false
if expect and (#result.diagnostics == 0 or result.diagnostics[1].code ~= expect) then
  out:write('FAIL: expected ' .. expect .. ' first\n')
  failed = true
end
-- vim.diagnostic got them too (what the user sees in the buffer).
local shown = vim.diagnostic.get(bufnr)
if #shown ~= #result.diagnostics then
  out:write('FAIL: vim.diagnostic has ' .. #shown .. ' diagnostics\n')
  failed = true
end
vim.lsp.stop_client(client_id) -- shutdown + exit
vim.wait(3000, function() return exit_code ~= nil end, 20)
if exit_code ~= 0 then
  out:write('FAIL: server exit status ' .. tostring(exit_code) .. ' after shutdown + exit\n')
  failed = true
end
if failed then vim.cmd('cq 1') end
out:write('OK: ' .. #result.diagnostics .. ' diagnostics, server exited 0\n')
vim.cmd('qa!')
