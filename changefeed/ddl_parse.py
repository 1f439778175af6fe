"""Read a MySQL DDL statement: its kind, the tables it touches (schema-qualified), and the column and
table renames and drops it makes. Shared by capture and the Spark pipeline (one reading of DDL).

Built on sqlglot's MySQL dialect:

- Names come from sqlglot's tokens, read in the fixed places the MySQL grammar puts them (MySQL 8.0
  manual, 15.1 "Data Definition Statements"). sqlglot's parser gives up (a `Command`, or ParseError) on
  several statements capture must attribute: RENAME TABLE, ALTER DATABASE, MariaDB's ALTER ONLINE
  TABLE, ALTER TABLE ... PARTITION BY / CONVERT TO / RENAME AS; the tokens of a statement head are
  always there.
- What an ALTER TABLE does to columns comes from sqlglot's parser, one clause at a time, so a clause
  it cannot parse (DROP PARTITION, CHANGE COLUMN IF EXISTS) does not hide the others. A clause that
  still cannot be read and might drop or rename a column raises DDLParseError instead of guessing.
- Unqualified names take the session's default database (the Query event's schema), as MySQL
  resolves them (MySQL manual 11.2.2 "Identifier Qualifiers"). An unqualified name with no default
  database raises DDLParseError: MySQL itself refuses it ("No database selected"), so a binlog never
  holds one, and naming an empty database would send the change to the wrong table.
- MySQL executes the content of `/*! ... */` (and `/*!NNNNN ... */`) comments, MariaDB also of
  `/*M!NNNNN ... */` (MySQL manual 11.7 "Comments"): their content is read as part of the statement;
  every other comment is ignored.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.dialects.mysql import MySQL
from sqlglot.errors import SqlglotError
from sqlglot.tokenizer_core import Token, TokenType

from changefeed.errors import DDLParseError
from changefeed.model import DDLKind, TableName

_PUNCTUATION = {TokenType.DOT, TokenType.COMMA, TokenType.L_PAREN, TokenType.R_PAREN, TokenType.SEMICOLON,
                TokenType.EQ, TokenType.STRING, TokenType.NUMBER, TokenType.HEX_STRING, TokenType.BIT_STRING}
_NOT_COLUMN_DROPS = {"INDEX", "KEY", "PRIMARY", "FOREIGN", "CONSTRAINT", "CHECK", "PARTITION", "PERIOD",
                     "SYSTEM", "FULLTEXT", "SPATIAL", "UNIQUE"}
_OTHER_OBJECTS = {"VIEW", "PROCEDURE", "FUNCTION", "TRIGGER", "EVENT", "USER", "ROLE", "SEQUENCE", "SERVER",
                  "TABLESPACE", "LOGFILE", "RESOURCE", "PACKAGE", "SYNONYM"}
_DATABASE_OPTIONS = {"DEFAULT", "CHARACTER", "CHARSET", "COLLATE", "ENCRYPTION", "READ", "COMMENT", "UPGRADE"}


class _Tokenizer(MySQL.Tokenizer):
    # MySQL's tokenizer turns everything after RENAME into one string; its names are needed here.
    COMMANDS = MySQL.Tokenizer.COMMANDS - {TokenType.RENAME}


@dataclass(frozen=True)
class DropColumn:
    name: str


@dataclass(frozen=True)
class RenameColumn:
    old: str
    new: str


ColumnChange = DropColumn | RenameColumn


@dataclass(frozen=True)
class ColumnDefault:
    """A column's DEFAULT clause. `kind`: "none" (no DEFAULT clause), "null", "literal" (`value` is the
    constant's text as MySQL reads it; `is_string` tells a quoted string from a number), "now"
    (CURRENT_TIMESTAMP and its synonyms, `value` the fractional digits asked for), "expression"
    (anything else: MySQL 8.0.13's `DEFAULT (expr)`, or a function; `value` its SQL), "unreadable" (a
    column definition sqlglot cannot parse; `value` its text)."""

    kind: str
    value: str | None = None
    is_string: bool = False


@dataclass(frozen=True)
class ColumnDefinition:
    """One column as ADD/MODIFY/CHANGE define it (MySQL manual 15.1.9 "ALTER TABLE Statement").

    `definition` is the clause text from the column's name on (`s VARCHAR(12) NOT NULL DEFAULT 'x'`),
    for readers of the data type; `first`/`after` the position (`FIRST` / `AFTER after`; neither: an
    added column goes last, a modified one stays); `computed` for values MySQL computes per row
    (AUTO_INCREMENT, generated `AS (expr)` columns)."""

    name: str
    definition: str
    nullable: bool = True
    default: ColumnDefault = ColumnDefault("none")
    computed: bool = False
    first: bool = False
    after: str | None = None


@dataclass(frozen=True)
class AddColumn:
    column: ColumnDefinition
    if_not_exists: bool = False


@dataclass(frozen=True)
class ModifyColumn:
    """MODIFY c ... (`old` == the column's name) or CHANGE old new ...: a new definition, maybe a new name."""

    old: str
    column: ColumnDefinition


ColumnEdit = DropColumn | RenameColumn | AddColumn | ModifyColumn


@dataclass(frozen=True)
class RenameTable:
    old: TableName
    new: TableName


@dataclass(frozen=True)
class ParsedDDL:
    """`tables`: every table the statement touches, qualified (RENAME: old then new of each pair);
    `database`: the database a CREATE/DROP/ALTER DATABASE names; `renames` and `column_changes` in
    statement order; `sql`: the statement with executable comments opened (what MySQL ran);
    `column_edits`: every column clause of an ALTER TABLE in statement order (drops, renames, and the
    definitions ADD/MODIFY/CHANGE give, with their DEFAULT and position; CHANGE is one ModifyColumn)."""

    kind: DDLKind
    tables: tuple[TableName, ...]
    database: str | None = None
    renames: tuple[RenameTable, ...] = ()
    column_changes: tuple[ColumnChange, ...] = ()
    sql: str = ""
    column_edits: tuple[ColumnEdit, ...] = ()


def _tokens(sql: str) -> list[Token]:
    try:
        return list(_Tokenizer().tokenize(sql))
    except SqlglotError as exc:
        raise DDLParseError(f"cannot read the statement {_short(sql)!r}: {exc}") from exc


def _short(sql: str) -> str:
    text = " ".join(sql.split())
    return text if len(text) <= 200 else text[:197] + "..."


def _gap_comments(gap: str) -> str:
    """The text between two tokens (only spaces and comments) with executable comments opened."""
    out: list[str] = []
    i = 0
    while i < len(gap):
        if gap.startswith(("--", "#"), i):
            end = gap.find("\n", i)
            i = len(gap) if end < 0 else end
        elif gap.startswith("/*", i):
            end = gap.find("*/", i + 2)
            end = len(gap) if end < 0 else end
            body = gap[i + 2:end]
            if body.startswith(("!", "M!")):
                body = body[body.index("!") + 1:]
                version = len(body) - len(body.lstrip("0123456789"))
                out.append(" " + body[version:] + " ")
            else:
                out.append(" ")
            i = end + 2
        else:
            out.append(gap[i])
            i += 1
    return "".join(out)


def executable_sql(sql: str) -> str:
    """The statement as MySQL runs it: executable comments opened, other comments blanked out.
    Comments can only sit between tokens, so only the gaps between sqlglot's tokens are rewritten."""
    for _ in range(3):  # an opened comment may hold another one; MySQL does not nest deeper
        tokens = _tokens(sql)
        pieces: list[str] = []
        previous_end = 0
        for token in tokens:
            pieces.append(_gap_comments(sql[previous_end:token.start]))
            pieces.append(sql[token.start:token.end + 1])
            previous_end = token.end + 1
        pieces.append(_gap_comments(sql[previous_end:]))
        opened = "".join(pieces).strip().rstrip(";").strip()
        if opened == sql:
            break
        sql = opened
    return sql


def _word(token: Token) -> str:
    """A token's keyword spelling; backquoted identifiers are never keywords."""
    return "" if token.token_type is TokenType.IDENTIFIER else token.text.upper()


def _is_name(token: Token) -> bool:
    if token.token_type is TokenType.IDENTIFIER:
        return True
    return token.token_type not in _PUNCTUATION and all(c.isalnum() or c in "_$" for c in token.text)


class _Reader:
    """A cursor over a statement's tokens."""

    def __init__(self, sql: str, tokens: Sequence[Token], default_db: str) -> None:
        self.sql = sql
        self.tokens = tokens
        self.i = 0
        self.default_db = default_db

    def peek(self, ahead: int = 0) -> str:
        j = self.i + ahead
        return _word(self.tokens[j]) if j < len(self.tokens) else ""

    def accept(self, *words: str) -> bool:
        if self.peek() in words and self.peek():
            self.i += 1
            return True
        return False

    def accept_seq(self, *words: str) -> bool:
        if all(self.peek(k) == w for k, w in enumerate(words)):
            self.i += len(words)
            return True
        return False

    def fail(self, what: str) -> DDLParseError:
        return DDLParseError(f"cannot read {what} in the DDL statement {_short(self.sql)!r}; "
                             "report it with the statement so the DDL reader learns its form")

    def name(self, what: str) -> str:
        if self.i >= len(self.tokens) or not _is_name(self.tokens[self.i]):
            raise self.fail(what)
        self.i += 1
        return str(self.tokens[self.i - 1].text)

    def table(self) -> TableName:
        first = self.name("a table name")
        if self.i < len(self.tokens) and self.tokens[self.i].token_type is TokenType.DOT:
            self.i += 1
            return TableName(first, self.name("a table name"))
        if not self.default_db:
            raise DDLParseError(
                f"table {first!r} in the DDL statement {_short(self.sql)!r} names no database and the "
                "session had no default database (MySQL would have refused it); cannot tell which table it is")
        return TableName(self.default_db, first)

    def tables(self) -> list[TableName]:
        names = [self.table()]
        while self.i < len(self.tokens) and self.tokens[self.i].token_type is TokenType.COMMA:
            self.i += 1
            names.append(self.table())
        return names

    def if_exists(self) -> None:
        self.accept_seq("IF", "NOT", "EXISTS") or self.accept_seq("IF", "EXISTS")

    def skip_definer(self) -> None:
        if self.accept("DEFINER"):
            self.accept("=")
            while self.i < len(self.tokens) and self.peek() not in _OTHER_OBJECTS:
                self.i += 1


def parse_ddl(sql: str, default_db: str) -> ParsedDDL | None:
    """Read one statement from a binlog Query event. None when it is not DDL (DML logged as a
    statement, SAVEPOINT, ...). Raises DDLParseError for DDL whose tables cannot be told."""
    try:
        text = executable_sql(sql)
        tokens = _tokens(text)
    except DDLParseError:
        head = sql.lstrip().split(None, 1)[0].upper() if sql.strip() else ""
        if head in ("CREATE", "ALTER", "DROP", "RENAME", "TRUNCATE"):
            raise
        return None  # not DDL (e.g. DML logged as a statement, in syntax sqlglot does not know)
    r = _Reader(text, tokens, default_db)
    first = r.peek()
    if first in ("GRANT", "REVOKE", "FLUSH", "ANALYZE", "OPTIMIZE", "REPAIR"):
        return ParsedDDL(DDLKind.OTHER, (), sql=text)
    if not r.accept("CREATE", "ALTER", "DROP", "RENAME", "TRUNCATE"):
        return None
    if first == "RENAME":
        return _rename(r, text)
    if first == "TRUNCATE":
        r.accept("TABLE")
        return ParsedDDL(DDLKind.TRUNCATE_TABLE, (r.table(),), sql=text)
    r.accept_seq("OR", "REPLACE")
    r.skip_definer()
    while r.accept("ONLINE", "OFFLINE", "IGNORE", "TEMPORARY", "UNIQUE", "FULLTEXT", "SPATIAL"):
        pass
    if r.accept("DATABASE", "SCHEMA"):
        return _database(r, first, text)
    if r.accept("TABLE", "TABLES"):
        r.if_exists()
        if first == "DROP":
            return ParsedDDL(DDLKind.DROP_TABLE, tuple(r.tables()), sql=text)
        if first == "CREATE":
            return ParsedDDL(DDLKind.CREATE_TABLE, (r.table(),), sql=text)
        return _alter_table(r, text)
    if r.accept("INDEX"):
        r.if_exists()
        r.name("an index name")
        while r.i < len(r.tokens) and r.peek() != "ON":
            r.i += 1  # CREATE INDEX i USING BTREE ON t (...)
        if not r.accept("ON"):
            raise r.fail("the table of the index")
        kind = DDLKind.CREATE_INDEX if first == "CREATE" else DDLKind.DROP_INDEX
        return ParsedDDL(kind, (r.table(),), sql=text)
    if r.peek() in _OTHER_OBJECTS or r.peek() == "ALGORITHM" or r.peek() == "SQL":
        return ParsedDDL(DDLKind.OTHER, _view_or_sequence(r), sql=text)
    return None


def _view_or_sequence(r: _Reader) -> tuple[TableName, ...]:
    """The names a VIEW or SEQUENCE statement touches: TiCDC sends those statements as canal-JSON
    QUERY messages of that name (tiflow canal_entry.go convertDdlEventType); other objects touch no
    table."""
    while r.i < len(r.tokens) and r.peek() not in ("VIEW", "SEQUENCE"):
        if r.peek() in _OTHER_OBJECTS:
            return ()
        r.i += 1  # ALGORITHM=MERGE, SQL SECURITY DEFINER before VIEW
    if not r.accept("VIEW", "SEQUENCE"):
        return ()
    r.if_exists()
    return tuple(r.tables())


def _database(r: _Reader, verb: str, text: str) -> ParsedDDL:
    r.if_exists()
    if verb == "ALTER" and (r.i >= len(r.tokens) or r.peek() in _DATABASE_OPTIONS):
        database = r.default_db  # ALTER DATABASE without a name alters the default database
        if not database:
            raise r.fail("the database (none named, no default database)")
    else:
        database = r.name("a database name")
    kind = {"CREATE": DDLKind.CREATE_DATABASE, "DROP": DDLKind.DROP_DATABASE}.get(verb, DDLKind.ALTER_DATABASE)
    return ParsedDDL(kind, (), database, sql=text)


def _rename(r: _Reader, text: str) -> ParsedDDL:
    if not r.accept("TABLE", "TABLES"):
        return ParsedDDL(DDLKind.OTHER, (), sql=text)  # RENAME USER
    renames: list[RenameTable] = []
    while True:
        old = r.table()
        if r.accept("WAIT"):
            r.i += 1
        r.accept("NOWAIT")
        if not r.accept("TO"):
            raise r.fail("TO in RENAME TABLE")
        renames.append(RenameTable(old, r.table()))
        if r.i < len(r.tokens) and r.tokens[r.i].token_type is TokenType.COMMA:
            r.i += 1
            continue
        break
    tables = tuple(n for rename in renames for n in (rename.old, rename.new))
    return ParsedDDL(DDLKind.RENAME_TABLE, tables, renames=tuple(renames), sql=text)


def _clauses(r: _Reader) -> list[list[Token]]:
    """The rest of the statement split at top-level commas (DECIMAL(10,2) stays whole)."""
    return _split_tokens(r.tokens[r.i:])


def _alter_table(r: _Reader, text: str) -> ParsedDDL:
    table = r.table()
    changes: list[ColumnChange] = []
    edits: list[ColumnEdit] = []
    rename: RenameTable | None = None
    clauses = _clauses(r)
    if len(clauses) == 1:  # several clauses are one multi-schema change: ALTER for TiCDC
        single = _single_clause(_Reader(text, clauses[0], r.default_db), table, text)
        if single is not None:
            return single
    for clause in clauses:
        clause_sql = text[clause[0].start:clause[-1].end + 1]
        sub = _Reader(text, clause, r.default_db)
        if sub.accept("RENAME") and sub.peek() not in ("COLUMN", "INDEX", "KEY"):
            sub.accept("TO", "AS")  # ALTER TABLE t RENAME [TO|AS] new: a table rename
            rename = RenameTable(table, sub.table())
            continue
        sub.i = 0
        parsed = _parse_clause(clause_sql)
        if parsed is None:
            found = _unparsed_clause(sub, clause_sql)
            changes.extend(found)
            edits.extend(_unparsed_edits(clause, text) or found)
        else:
            for action in parsed:
                changes.extend(_column_change(action))
                edits.extend(_column_edits(action, _definition_text(clause, text)))
    if rename is not None:
        return ParsedDDL(DDLKind.RENAME_TABLE, (rename.old, rename.new), renames=(rename,),
                         column_changes=tuple(changes), sql=text, column_edits=tuple(edits))
    return ParsedDDL(DDLKind.ALTER_TABLE, (table,), column_changes=tuple(changes), sql=text,
                     column_edits=tuple(edits))


def _definition_text(clause: Sequence[Token], text: str) -> str:
    """The clause from the defined column's name on: past the verb, COLUMN, IF [NOT] EXISTS and, for
    CHANGE, the old name."""
    verb = _word(clause[0])
    i = 1
    if i < len(clause) and _word(clause[i]) == "COLUMN":
        i += 1
    if i < len(clause) and _word(clause[i]) == "IF":
        i += 3 if i + 1 < len(clause) and _word(clause[i + 1]) == "NOT" else 2
    if verb == "CHANGE":
        i += 1
    return text[clause[i].start:clause[-1].end + 1] if i < len(clause) else ""


def _column_edits(action: exp.Expression, definition: str) -> list[ColumnEdit]:
    if isinstance(action, exp.ColumnDef):
        return [AddColumn(_definition(action, definition), bool(action.args.get("exists")))]
    if isinstance(action, exp.ModifyColumn) and isinstance(action.this, exp.ColumnDef):
        old = action.args.get("rename_from")
        column = _definition(action.this, definition)
        return [ModifyColumn(old.name if old is not None else column.name, column)]
    return list(_column_change(action))


def _unparsed_edits(clause: Sequence[Token], text: str) -> list[ColumnEdit]:
    """Column definitions in clause forms sqlglot does not read: MariaDB's `MODIFY/CHANGE [COLUMN] IF
    EXISTS` (read without IF EXISTS: a missing column is skipped when applied anyway) and
    `ADD [COLUMN] (c1 def1, c2 def2)`."""
    verb = _word(clause[0])
    i = 2 if len(clause) > 1 and _word(clause[1]) == "COLUMN" else 1
    if verb in ("MODIFY", "CHANGE") and i < len(clause) and _word(clause[i]) == "IF":
        rest = text[clause[i + 2].start:clause[-1].end + 1] if i + 2 < len(clause) else ""
        parsed = _parse_clause(f"{verb} COLUMN {rest}")
        return [e for a in parsed or [] for e in _column_edits(a, _definition_text(clause, text))]
    if verb == "ADD" and i < len(clause) and clause[i].token_type is TokenType.L_PAREN:
        inner = clause[i + 1:-1] if clause[-1].token_type is TokenType.R_PAREN else []
        edits: list[ColumnEdit] = []
        for part in _split_tokens(inner):
            definition = text[part[0].start:part[-1].end + 1]
            parsed = _parse_clause(f"ADD COLUMN {definition}")
            edits.extend(e for a in parsed for e in _column_edits(a, definition)) if parsed is not None else \
                edits.append(_unreadable(part, definition))
        return edits
    if verb == "ADD" and i < len(clause) and _word(clause[i]) not in _NOT_COLUMN_DROPS | {"IF"}:
        return [_unreadable(clause[i:], _definition_text(clause, text))]
    return []


def _unreadable(tokens: Sequence[Token], definition: str) -> AddColumn:
    """An added column whose definition sqlglot cannot read: kept (default kind "unreadable") so a
    reader that needs its DEFAULT can refuse the statement instead of missing the column."""
    name = str(tokens[0].text) if tokens and _is_name(tokens[0]) else ""
    return AddColumn(ColumnDefinition(name, definition, default=ColumnDefault("unreadable", definition)))


def _split_tokens(tokens: Sequence[Token]) -> list[list[Token]]:
    parts: list[list[Token]] = [[]]
    depth = 0
    for token in tokens:
        if token.token_type is TokenType.L_PAREN:
            depth += 1
        elif token.token_type is TokenType.R_PAREN:
            depth -= 1
        elif token.token_type is TokenType.COMMA and depth == 0:
            parts.append([])
            continue
        parts[-1].append(token)
    return [p for p in parts if p]


_COMPUTED = (exp.AutoIncrementColumnConstraint, exp.ComputedColumnConstraint, exp.GeneratedAsIdentityColumnConstraint)
_NOW = {"NOW", "CURRENT_TIMESTAMP", "LOCALTIME", "LOCALTIMESTAMP"}


def _definition(column: exp.ColumnDef, definition: str) -> ColumnDefinition:
    kinds = [c.args.get("kind") for c in column.args.get("constraints") or []]
    nullable = not any((isinstance(k, exp.NotNullColumnConstraint) and not k.args.get("allow_null"))
                       or isinstance(k, exp.PrimaryKeyColumnConstraint) for k in kinds)
    default = next((_default(k.this) for k in kinds if isinstance(k, exp.DefaultColumnConstraint)),
                   ColumnDefault("none"))
    kind = column.args.get("kind")
    serial = isinstance(kind, exp.DataType) and kind.this == exp.DataType.Type.SERIAL
    position = column.args.get("position")
    where = str(position.args.get("position") or "").upper() if position is not None else ""
    return ColumnDefinition(
        column.name, definition, nullable and not serial, default,
        computed=serial or any(isinstance(k, _COMPUTED) for k in kinds),
        first=where == "FIRST", after=position.this.name if position is not None and where == "AFTER" else None,
    )


def _default(value: exp.Expression) -> ColumnDefault:
    """A DEFAULT clause's value (MySQL manual 13.6 "Data Type Default Values")."""
    if isinstance(value, exp.Paren) and isinstance(value.this, exp.Literal | exp.Neg | exp.Null):
        value = value.this  # DEFAULT ('x'): an expression that is a constant
    if isinstance(value, exp.Introducer | exp.Cast) and isinstance(value.this if isinstance(value, exp.Cast)
                                                                   else value.expression, exp.Literal):
        value = value.this if isinstance(value, exp.Cast) else value.expression  # _utf8mb4'x', DATE '2020-01-01'
    if isinstance(value, exp.Null):
        return ColumnDefault("null")
    if isinstance(value, exp.Literal):
        return ColumnDefault("literal", str(value.this), bool(value.is_string))
    if isinstance(value, exp.Neg) and isinstance(value.this, exp.Literal) and not value.this.is_string:
        return ColumnDefault("literal", f"-{value.this.this}")
    if isinstance(value, exp.Boolean):
        return ColumnDefault("literal", "1" if value.this else "0")
    if isinstance(value, exp.BitString):
        return ColumnDefault("literal", str(int(str(value.this) or "0", 2)))
    name = str(value.this).upper() if isinstance(value, exp.Anonymous) else ""
    if isinstance(value, exp.CurrentTimestamp | exp.Localtimestamp) or name in _NOW:
        digits = value.this if not isinstance(value, exp.Anonymous) else (value.expressions or [None])[0]
        return ColumnDefault("now", str(digits.this) if isinstance(digits, exp.Literal) else "0")
    return ColumnDefault("expression", value.sql(dialect="mysql"))


_ADD_INDEX = {"INDEX", "KEY", "UNIQUE", "PRIMARY", "FOREIGN", "FULLTEXT", "SPATIAL"}
_DROP_INDEX = {"INDEX", "KEY", "PRIMARY", "FOREIGN"}


def _single_clause(sub: _Reader, table: TableName, text: str) -> ParsedDDL | None:
    """An ALTER TABLE whose one clause adds or drops an index or key, or exchanges a partition: TiDB
    runs these as their own DDL actions, which TiCDC's canal-JSON calls CINDEX, DINDEX and QUERY
    (tiflow canal_entry.go convertDdlEventType: ActionAddIndex/AddPrimaryKey/AddForeignKey,
    ActionDropIndex/DropPrimaryKey/DropForeignKey, ActionExchangeTablePartition)."""
    def word() -> str:  # sqlglot reads `PRIMARY KEY` and `FOREIGN KEY` as one token
        return (sub.peek().split() or [""])[0]

    verb = sub.peek()
    sub.i = 1
    if verb == "ADD":
        if sub.accept("CONSTRAINT") and word() not in _ADD_INDEX:
            sub.i += 1  # the constraint's name
        return ParsedDDL(DDLKind.CREATE_INDEX, (table,), sql=text) if word() in _ADD_INDEX else None
    if verb == "DROP":
        return ParsedDDL(DDLKind.DROP_INDEX, (table,), sql=text) if word() in _DROP_INDEX else None
    if verb == "EXCHANGE" and sub.accept("PARTITION"):
        sub.name("a partition name")
        if sub.accept("WITH") and sub.accept("TABLE"):
            return ParsedDDL(DDLKind.OTHER, (table, sub.table()), sql=text)
    return None


def _parse_clause(clause_sql: str) -> list[exp.Expression] | None:
    """sqlglot's reading of one ALTER TABLE clause, or None when it cannot read it."""
    try:
        statement = sqlglot.parse_one(f"ALTER TABLE _t {clause_sql}", read="mysql")
    except SqlglotError:
        return None
    if not isinstance(statement, exp.Alter):
        return None  # sqlglot fell back to a Command: it did not understand the clause
    actions = list(statement.args.get("actions") or [])
    return None if any(isinstance(a, exp.Command) for a in actions) else actions


def _column_change(action: exp.Expression) -> list[ColumnChange]:
    if isinstance(action, exp.Drop) and str(action.args.get("kind") or "").upper() == "COLUMN":
        return [DropColumn(c.name) for c in action.args.get("tables") or []]
    if isinstance(action, exp.RenameColumn):
        return [RenameColumn(action.this.name, action.args["to"].name)]
    if isinstance(action, exp.ModifyColumn) and action.args.get("rename_from") is not None:
        old, new = action.args["rename_from"].name, action.this.name
        return [RenameColumn(old, new)] if old != new else []  # CHANGE a a <type> changes only the type
    return []


def _unparsed_clause(r: _Reader, clause_sql: str) -> list[ColumnChange]:
    """A clause sqlglot cannot parse: read the column forms by hand, refuse other column-changing forms."""
    verb = _word(r.tokens[0])
    r.i = 1
    if verb == "CHANGE":
        r.accept("COLUMN")
        r.if_exists()
        old, new = r.name("a column name"), r.name("a column name")
        return [RenameColumn(old, new)] if old != new else []
    if verb == "RENAME" and r.peek() in ("INDEX", "KEY"):
        return []
    if verb == "DROP" and r.peek() in _NOT_COLUMN_DROPS:
        return []
    if verb in ("DROP", "RENAME"):
        raise r.fail(f"what the clause {clause_sql!r} does to columns")
    return []


def qualified_rename_sql(renames: Sequence[RenameTable]) -> str:
    """`RENAME TABLE a.t TO b.t, ...` with every name qualified and quoted, so a reader without the
    session's default database renames the same tables (TiCDC likewise rewrites renames it splits)."""

    def name(t: TableName) -> str:
        return ".".join("`" + part.replace("`", "``") + "`" for part in (t.schema, t.table))

    return "RENAME TABLE " + ", ".join(f"{name(r.old)} TO {name(r.new)}" for r in renames)
