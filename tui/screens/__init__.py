"""The dashboard's screens, one module each: live view, leaderboard and its drill-downs."""
