"""What runs as a process starts under ``trainprof record``: the import hook
that instruments a framework once the script imports it (after_import), and
the record of how the process ends (process_end). trainprof/_autoload.py,
loaded by trainprof-autoload.pth, starts them."""
