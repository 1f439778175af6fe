"""Pure partition replication state: LEOs, high watermark, ISR, purgatory, follower truncation."""
