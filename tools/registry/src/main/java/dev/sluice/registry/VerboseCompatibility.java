package dev.sluice.registry;

import com.fasterxml.jackson.annotation.JsonProperty;
import io.apicurio.registry.ccompat.rest.v7.CompatibilityResource;
import io.apicurio.registry.ccompat.rest.v7.beans.CompatibilityCheckResponse;
import io.apicurio.registry.ccompat.rest.v7.beans.RegisterSchemaRequest;
import io.apicurio.registry.ccompat.rest.v7.impl.SluiceCompatibilityMessages;
import jakarta.annotation.Priority;
import jakarta.decorator.Decorator;
import jakarta.decorator.Delegate;
import jakarta.enterprise.context.Dependent;
import jakarta.enterprise.inject.Any;
import jakarta.inject.Inject;
import java.util.List;

/**
 * Adds Confluent's `messages` to an incompatible answer of
 * POST /compatibility/subjects/{subject}/versions/{version}?verbose=true, which Apicurio 3.0.9
 * leaves out (2.x sent a `reason`). Clients show them to say what breaks; the verdict is
 * Apicurio's own.
 */
@Decorator
@Dependent
@Priority(10)
public abstract class VerboseCompatibility implements CompatibilityResource {
  @Inject @Delegate @Any CompatibilityResource delegate;
  @Inject SluiceCompatibilityMessages messages;

  @Override
  public CompatibilityCheckResponse checkCompatibility(
      String subject, String version, Boolean verbose, String groupId, RegisterSchemaRequest request) {
    CompatibilityCheckResponse answer = delegate.checkCompatibility(subject, version, verbose, groupId, request);
    if (!Boolean.TRUE.equals(verbose) || !Boolean.FALSE.equals(answer.getIsCompatible())) return answer;
    return new WithMessages(messages.explain(subject, version, groupId, request));
  }

  /** An incompatible answer with the reasons. */
  public static class WithMessages extends CompatibilityCheckResponse {
    @JsonProperty("messages")
    public final List<String> messages;

    WithMessages(List<String> messages) {
      this.messages = messages;
      setIsCompatible(false);
    }
  }
}
