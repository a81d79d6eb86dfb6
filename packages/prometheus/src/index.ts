export {
  escapeLabelValue,
  type MetricsSource,
  PROMETHEUS_CONTENT_TYPE,
  type PrometheusOptions,
  type PrometheusResponse,
  prometheusHandler,
  prometheusText,
} from './exposition.js';
