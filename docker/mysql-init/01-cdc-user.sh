#!/bin/sh
# Run once by the mysql image on an empty data directory (/docker-entrypoint-initdb.d): the changefeed's
# least-privilege capture user, as docs/runbooks/use-your-own-mysql.md ("The capture user") lists for
# MySQL 8.4 - binlog dump, binlog status, SELECT on the captured database, RELOAD for snapshot-mode initial.
set -eu
mysql --protocol=socket -uroot -p"${MYSQL_ROOT_PASSWORD}" <<SQL
CREATE DATABASE IF NOT EXISTS shop;
CREATE USER IF NOT EXISTS 'lakefeed_cdc'@'%' IDENTIFIED BY '${LAKEFEED_CDC_PASSWORD}';
GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'lakefeed_cdc'@'%';
GRANT SELECT ON shop.* TO 'lakefeed_cdc'@'%';
GRANT RELOAD ON *.* TO 'lakefeed_cdc'@'%';
SQL
