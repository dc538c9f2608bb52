"""The master table in every output format, one module per format family: ``terminal`` (rich,
``streameval table``), ``markdown`` (``--markdown``), ``csv_table`` (``--csv``), ``json_table``
(``--json``) and ``html_table`` (``--html`` and the top of ``index.html``); ``legend`` holds
what the human-readable ones print under a table, ``notes`` what every format's reader is told
on stderr (an empty table, models scored with different backends).

They only draw a ``MasterTable`` (``leaderboard.table``): every number, status, exclusion and
rank is computed before. The command line (``cli/table.py``) parses arguments and picks one;
the report (``report/master.py``, ``report/index.py``) wraps the HTML one in a page.
"""
