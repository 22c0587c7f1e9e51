-- Nothing, read through the trends' views (reports.view.serve.warm): binds every view over the
-- warehouse's files, the trends' too, before the viewer answers its first page.
SELECT 1 FROM cell_history LIMIT 0;
