import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;

import org.apache.flink.api.common.serialization.DeserializationSchema;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.formats.common.TimestampFormat;
import org.apache.flink.formats.json.canal.CanalJsonDecodingFormat;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.types.DataType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.utils.LogicalTypeParser;
import org.apache.flink.table.types.utils.TypeConversions;
import org.apache.flink.util.Collector;
import org.apache.flink.util.SimpleUserCodeClassLoader;
import org.apache.flink.util.UserCodeClassLoader;

/**
 * Decodes canal-JSON messages with Apache Flink's own `canal-json` format, the way Flink's table
 * runtime builds it: CanalJsonDecodingFormat#createRuntimeDecoder, then open() and
 * deserialize(byte[], Collector). Used by Lakefeed's tests as a consumer from another project.
 *
 * Arguments: the physical row type (Flink SQL, e.g. "ROW<`id` INT, `name` STRING>"),
 * ignore-parse-errors (true/false), and a file with one base64-encoded message per line.
 * Prints one line per message: "MSG <n>", then "ROW <kind> <field>..." per row it produced
 * (fields tab-separated, NULL as \N) or "ERROR <message>" when the format refused the message.
 */
public final class DecodeCanalJson {
    public static void main(String[] args) throws Exception {
        LogicalType physical = LogicalTypeParser.parse(args[0], DecodeCanalJson.class.getClassLoader());
        boolean ignoreParseErrors = Boolean.parseBoolean(args[1]);
        DataType dataType = TypeConversions.fromLogicalToDataType(physical);
        int fields = ((RowType) physical).getFieldCount();
        int[][] projection = new int[fields][];
        for (int i = 0; i < fields; i++) {
            projection[i] = new int[] {i};
        }
        CanalJsonDecodingFormat format =
                new CanalJsonDecodingFormat(null, null, ignoreParseErrors, TimestampFormat.SQL);
        DeserializationSchema<RowData> schema = format.createRuntimeDecoder(new Context(), dataType, projection);
        schema.open(new InitContext());
        List<String> lines = Files.readAllLines(Paths.get(args[2]), StandardCharsets.US_ASCII);
        StringBuilder out = new StringBuilder();
        for (int n = 0; n < lines.size(); n++) {
            out.append("MSG ").append(n).append('\n');
            List<RowData> rows = new ArrayList<>();
            try {
                schema.deserialize(Base64.getDecoder().decode(lines.get(n)), new ListCollector(rows));
            } catch (IOException e) {
                String cause = e.getCause() == null ? "" : " caused by: " + e.getCause().getMessage();
                out.append("ERROR ").append(oneLine(e.getMessage() + cause)).append('\n');
            }
            for (RowData row : rows) {
                GenericRowData generic = (GenericRowData) row;
                out.append("ROW ").append(row.getRowKind().shortString());
                for (int i = 0; i < generic.getArity(); i++) {
                    Object value = generic.getField(i);
                    out.append('\t').append(value == null ? "\\N" : oneLine(value.toString()));
                }
                out.append('\n');
            }
        }
        System.out.print(out);
    }

    private static String oneLine(String text) {
        return text == null ? "" : text.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t");
    }

    private static final class ListCollector implements Collector<RowData> {
        private final List<RowData> rows;

        ListCollector(List<RowData> rows) {
            this.rows = rows;
        }

        @Override
        public void collect(RowData record) {
            rows.add(record);
        }

        @Override
        public void close() {}
    }

    private static final class Context implements DynamicTableSource.Context {
        @Override
        public <T> TypeInformation<T> createTypeInformation(DataType producedDataType) {
            return createTypeInformation(producedDataType.getLogicalType());
        }

        @Override
        @SuppressWarnings("unchecked")
        public <T> TypeInformation<T> createTypeInformation(LogicalType producedLogicalType) {
            return (TypeInformation<T>) InternalTypeInfo.of(producedLogicalType);
        }

        @Override
        public DynamicTableSource.DataStructureConverter createDataStructureConverter(DataType producedDataType) {
            throw new UnsupportedOperationException("not needed to decode canal-json");
        }
    }

    private static final class InitContext implements DeserializationSchema.InitializationContext {
        @Override
        public MetricGroup getMetricGroup() {
            return new UnregisteredMetricsGroup();
        }

        @Override
        public UserCodeClassLoader getUserCodeClassLoader() {
            return SimpleUserCodeClassLoader.create(DecodeCanalJson.class.getClassLoader());
        }
    }
}
