// Kafka Connect's converters and transforms, called on values described in JSON: the JVM
// side of tests/support/connect_oracle.py. Everything that builds or reads a Connect value
// happens here, typed by its schema, because py4j unboxes every java.lang.Long or Float
// that crosses to Python and boxes a small Python int as an Integer on the way back, which
// Connect's schema checks refuse.
//
// A value's JSON form, by its schema: integers and floats as JSON numbers (non-finite
// floats as the strings "NaN", "Infinity", "-Infinity"), bytes as base64, a Decimal as
// its plain string, a Date as "yyyy-mm-dd", a Time as milliseconds of the day, a Timestamp
// as milliseconds since the epoch, an array as a JSON array, a map as an array of
// [key, value] pairs (keys need not be strings), a struct as an object by field name.
// Without a schema, what JsonConverter reads schemaless JSON into.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Date;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.connect.data.Field;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.header.ConnectHeaders;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.storage.Converter;
import org.apache.kafka.connect.storage.SimpleHeaderConverter;
import org.apache.kafka.connect.transforms.Transformation;
import org.apache.kafka.connect.transforms.predicates.Predicate;

public final class ConnectOracle {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;
    private static final JsonConverter SCHEMAS = schemas();
    private static final long DAY_MS = 86_400_000L;

    private ConnectOracle() {}

    private static JsonConverter schemas() {
        JsonConverter converter = new JsonConverter();
        converter.configure(Map.of("schemas.enable", "true"), false);
        return converter;
    }

    public static Schema schema(String spec) throws Exception {
        JsonNode node = JSON.readTree(spec);
        return node.isNull() ? null : SCHEMAS.asConnectSchema(node);
    }

    public static JsonNode spec(Schema schema) {
        return schema == null ? NODES.nullNode() : SCHEMAS.asJsonSchema(schema);
    }

    /** What the converter writes for the value `value` (JSON form) of the schema `spec`. */
    public static byte[] write(Converter converter, String topic, String spec, String value)
            throws Exception {
        Schema schema = schema(spec);
        return converter.fromConnectData(topic, schema, value(schema, JSON.readTree(value)));
    }

    /** {"schema": ..., "value": ...}: what the converter reads from `data`. */
    public static String read(Converter converter, String topic, byte[] data) throws Exception {
        SchemaAndValue read = converter.toConnectData(topic, data);
        ObjectNode out = NODES.objectNode();
        out.set("schema", spec(read.schema()));
        out.set("value", json(read.schema(), read.value()));
        return JSON.writeValueAsString(out);
    }

    /**
     * The record (JSON form, see `record`) after the chain, as a sink task applies it: each
     * transform whose predicate (if any) tests true, or false where `negate` says so. "null"
     * when a transform dropped it.
     */
    @SuppressWarnings({"rawtypes", "unchecked"})
    public static String apply(
            List<Transformation> chain, List<Predicate> predicates, List<Boolean> negate, String record)
            throws Exception {
        SinkRecord current = record(JSON.readTree(record));
        for (int i = 0; i < chain.size() && current != null; i++) {
            Predicate predicate = predicates.get(i);
            if (predicate == null || predicate.test(current) != negate.get(i)) {
                current = (SinkRecord) chain.get(i).apply(current);
            }
        }
        return current == null ? "null" : JSON.writeValueAsString(json(current));
    }

    /**
     * The bytes Connect's default header converter (SimpleHeaderConverter) writes for a
     * header value `value` (JSON form) of the schema `spec` (null: schemaless); null for none.
     */
    public static byte[] headerBytes(String spec, String value) throws Exception {
        Schema schema = schema(spec);
        SimpleHeaderConverter converter = new SimpleHeaderConverter();
        return converter.fromConnectHeader("topic", "header", schema, value(schema, JSON.readTree(value)));
    }

    static SinkRecord record(JsonNode node) throws Exception {
        Schema keySchema = schema(node.path("keySchema").toString());
        Schema valueSchema = schema(node.path("valueSchema").toString());
        ConnectHeaders headers = new ConnectHeaders();
        for (JsonNode header : node.path("headers")) {
            Schema schema = schema(header.get(1).toString());
            headers.add(header.get(0).asText(), value(schema, header.get(2)), schema);
        }
        JsonNode timestamp = node.path("timestamp");
        return new SinkRecord(
                node.path("topic").asText(),
                node.path("partition").asInt(0),
                keySchema,
                value(keySchema, node.path("key")),
                valueSchema,
                value(valueSchema, node.path("value")),
                node.path("offset").asLong(0),
                timestamp.isNumber() ? timestamp.asLong() : null,
                timestamp.isNumber() ? TimestampType.CREATE_TIME : TimestampType.NO_TIMESTAMP_TYPE,
                headers);
    }

    static ObjectNode json(SinkRecord record) {
        ObjectNode out = NODES.objectNode();
        out.put("topic", record.topic());
        if (record.kafkaPartition() == null) {
            out.putNull("partition");
        } else {
            out.put("partition", record.kafkaPartition());
        }
        out.set("keySchema", spec(record.keySchema()));
        out.set("key", json(record.keySchema(), record.key()));
        out.set("valueSchema", spec(record.valueSchema()));
        out.set("value", json(record.valueSchema(), record.value()));
        if (record.timestamp() == null) {
            out.putNull("timestamp");
        } else {
            out.put("timestamp", record.timestamp());
        }
        out.put("offset", record.kafkaOffset());
        ArrayNode headers = out.putArray("headers");
        for (Header header : record.headers()) {
            ArrayNode entry = headers.addArray();
            entry.add(header.key());
            entry.add(spec(header.schema()));
            entry.add(json(header.schema(), header.value()));
        }
        return out;
    }

    static Object value(Schema schema, JsonNode node) {
        if (node == null || node.isNull() || node.isMissingNode()) {
            return null;
        }
        if (schema == null) {
            return schemaless(node);
        }
        String logical = schema.name() == null ? "" : schema.name();
        switch (logical) {
            case "org.apache.kafka.connect.data.Decimal":
                return new BigDecimal(node.asText());
            case "org.apache.kafka.connect.data.Date":
                return new Date(LocalDate.parse(node.asText()).toEpochDay() * DAY_MS);
            case "org.apache.kafka.connect.data.Time":
            case "org.apache.kafka.connect.data.Timestamp":
                return new Date(node.asLong());
            default:
                break;
        }
        switch (schema.type()) {
            case INT8: return (byte) node.asLong();
            case INT16: return (short) node.asLong();
            case INT32: return (int) node.asLong();
            case INT64: return node.asLong();
            case FLOAT32: return (float) floating(node);
            case FLOAT64: return floating(node);
            case BOOLEAN: return node.asBoolean();
            case STRING: return node.asText();
            case BYTES: return Base64.getDecoder().decode(node.asText());
            case ARRAY: {
                List<Object> items = new ArrayList<>();
                for (JsonNode item : node) {
                    items.add(value(schema.valueSchema(), item));
                }
                return items;
            }
            case MAP: {
                Map<Object, Object> entries = new LinkedHashMap<>();
                for (JsonNode pair : node) {
                    entries.put(value(schema.keySchema(), pair.get(0)), value(schema.valueSchema(), pair.get(1)));
                }
                return entries;
            }
            default: {
                Struct struct = new Struct(schema);
                for (Field field : schema.fields()) {
                    if (node.has(field.name())) {
                        struct.put(field, value(field.schema(), node.get(field.name())));
                    }
                }
                return struct;
            }
        }
    }

    private static double floating(JsonNode node) {
        return node.isTextual() ? Double.parseDouble(node.asText()) : node.asDouble();
    }

    private static Object schemaless(JsonNode node) {
        if (node.isIntegralNumber()) {
            return node.asLong();
        }
        if (node.isNumber()) {
            return node.asDouble();
        }
        if (node.isBoolean()) {
            return node.asBoolean();
        }
        if (node.isArray()) {
            List<Object> items = new ArrayList<>();
            node.forEach(item -> items.add(schemaless(item)));
            return items;
        }
        if (node.isObject()) {
            Map<String, Object> entries = new LinkedHashMap<>();
            node.fields().forEachRemaining(entry -> entries.put(entry.getKey(), schemaless(entry.getValue())));
            return entries;
        }
        return node.isNull() ? null : node.asText();
    }

    static JsonNode json(Schema schema, Object value) {
        if (value == null) {
            return NODES.nullNode();
        }
        if (schema == null) {
            return JSON.valueToTree(value instanceof byte[] ? Base64.getEncoder().encodeToString((byte[]) value) : value);
        }
        String logical = schema.name() == null ? "" : schema.name();
        switch (logical) {
            case "org.apache.kafka.connect.data.Decimal":
                return NODES.textNode(((BigDecimal) value).toPlainString());
            case "org.apache.kafka.connect.data.Date":
                return NODES.textNode(LocalDate.ofEpochDay(Math.floorDiv(((Date) value).getTime(), DAY_MS)).toString());
            case "org.apache.kafka.connect.data.Time":
            case "org.apache.kafka.connect.data.Timestamp":
                return NODES.numberNode(((Date) value).getTime());
            default:
                break;
        }
        switch (schema.type()) {
            case INT8: case INT16: case INT32: case INT64:
                return NODES.numberNode(((Number) value).longValue());
            case FLOAT32: case FLOAT64: {
                double number = ((Number) value).doubleValue();
                return Double.isFinite(number) ? NODES.numberNode(number) : NODES.textNode(Double.toString(number));
            }
            case BOOLEAN: return NODES.booleanNode((Boolean) value);
            case STRING: return NODES.textNode((String) value);
            case BYTES: {
                byte[] bytes = value instanceof ByteBuffer ? toArray((ByteBuffer) value) : (byte[]) value;
                return NODES.textNode(Base64.getEncoder().encodeToString(bytes));
            }
            case ARRAY: {
                ArrayNode items = NODES.arrayNode();
                for (Object item : (List<?>) value) {
                    items.add(json(schema.valueSchema(), item));
                }
                return items;
            }
            case MAP: {
                ArrayNode pairs = NODES.arrayNode();
                for (Map.Entry<?, ?> entry : ((Map<?, ?>) value).entrySet()) {
                    ArrayNode pair = pairs.addArray();
                    pair.add(json(schema.keySchema(), entry.getKey()));
                    pair.add(json(schema.valueSchema(), entry.getValue()));
                }
                return pairs;
            }
            default: {
                ObjectNode fields = NODES.objectNode();
                Struct struct = (Struct) value;
                for (Field field : schema.fields()) {
                    fields.set(field.name(), json(field.schema(), struct.get(field)));
                }
                return fields;
            }
        }
    }

    private static byte[] toArray(ByteBuffer buffer) {
        byte[] bytes = new byte[buffer.remaining()];
        buffer.duplicate().get(bytes);
        return bytes;
    }
}
